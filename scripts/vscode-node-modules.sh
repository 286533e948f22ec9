#!/usr/bin/env bash
# editors/vscode/node_modules for this checkout, as `npm ci` makes it, from a cache kept across
# clones: $FXLS_E2E_HOME/node_modules-<hash of package-lock.json and node's version> (default
# ~/.cache/fxls-vscode-e2e). `npm ci` (about 26 s on 2 cores) runs only when the cache misses;
# otherwise the cache is copied with hard links (under a second). A checkout that has
# node_modules already keeps it.
#
#   bash scripts/vscode-node-modules.sh     # used by tests/editors and scripts/vscode-e2e.sh
#
# Takes the lock of the editor installs (tests/editors/installs.py): two `npm ci` in one
# folder, or into the cache at once, would break each other.
set -euo pipefail
ext="$(cd "$(dirname "$0")/../editors/vscode" && pwd)"
home=${FXLS_E2E_HOME:-$HOME/.cache/fxls-vscode-e2e}

exec {install_lock}>"${TMPDIR:-/tmp}/fxls-editor-installs.lock"
flock "$install_lock"
[ -d "$ext/node_modules" ] && exit 0

key=$({ cat "$ext/package-lock.json"; node --version; } | sha256sum | cut -c1-16)
cached="$home/node_modules-$key"
if [ ! -d "$cached" ]; then
    (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error)
    mkdir -p "$home"
    partial=$(mktemp -d "$home/node_modules-partial.XXXXXX")
    cp -a "$ext/node_modules" "$partial/node_modules"
    mv -T "$partial/node_modules" "$cached"
    rmdir "$partial"
    exit 0
fi
# Hard links share the files with the cache: nothing writes into node_modules in place
# (npm ci deletes the folder first), and a copy across file systems falls back to cp -a.
cp -al "$cached" "$ext/node_modules" 2>/dev/null || {
    rm -rf "$ext/node_modules"
    cp -a "$cached" "$ext/node_modules"
}
