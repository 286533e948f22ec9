#!/usr/bin/env bash
# End-to-end test of the VS Code extension in a real VS Code: code-server 4.99.4 (VS Code
# 1.99.3) from npm, driven by playwright-core in Debian's headless Chromium.
#
#   bash scripts/vscode-e2e.sh            # from the repository root
#
# Needs: .venv with fxls (scripts/bootstrap.sh), Node 20 + npm, apt (Debian). The first run
# installs system packages and code-server (~2-4 minutes) into $FXLS_E2E_HOME
# (default ~/.cache/fxls-vscode-e2e); later runs reuse it. Everything runs inside a fresh
# network namespace that has only loopback (when `unshare --net` works; otherwise loopback
# is still the only address used, and gallery/telemetry are pointed at or turned off).
# Screenshots go to editors/vscode/e2e/out (or $FXLS_E2E_OUT); FXLS_E2E_KEEP=1 keeps the
# temporary profile and logs of a passing run too; FXLS_E2E_ONLY=<regex> runs only the steps
# whose name matches (e.g. FXLS_E2E_ONLY=notebook; the workbench's load always). About 2
# minutes once installed (115 s on a 2-core machine at a load of 9); the first install of
# code-server takes 1-4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
ext="$repo/editors/vscode"
home=${FXLS_E2E_HOME:-$HOME/.cache/fxls-vscode-e2e}
start=${FXLS_E2E_START:-$(date +%s)}

log() { printf '[vscode-e2e %3ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

if [ "${1:-}" != "--inside-netns" ]; then
    # ---- preparation (needs the package registries) ----------------------------------
    [ -x .venv/bin/python ] || bash scripts/bootstrap.sh
    # the installs below, one at a time with the tests' own (tests/editors/installs.py)
    exec {install_lock}>"${TMPDIR:-/tmp}/fxls-editor-installs.lock"
    flock "$install_lock"
    need=()
    command -v chromium >/dev/null || need+=(chromium)
    command -v rg >/dev/null || need+=(ripgrep)
    for pkg in libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config; do
        dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
    done
    if [ ${#need[@]} -gt 0 ]; then
        log "apt-get install ${need[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    fi
    if [ ! -x "$home/node_modules/.bin/code-server" ] || ! cmp -s "$ext/e2e/package-lock.json" "$home/package-lock.json"; then
        log "installing code-server + playwright-core into $home"
        mkdir -p "$home"
        cp "$ext/e2e/package.json" "$ext/e2e/package-lock.json" "$home/"
        # @vscode/ripgrep downloads rg unless its cache already has it: give it Debian's.
        cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
        mkdir -p "$cache"
        tmp=$(mktemp -d)
        cp "$(command -v rg)" "$tmp/rg"
        tar -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$tmp" rg
        rm -rf "$tmp"
        (cd "$home" && FORCE_NODE_VERSION=20 npm_config_unsafe_perm=true npm_config_yes=true \
            npm ci --no-audit --no-fund --loglevel=error)
    fi
    flock --unlock "$install_lock"
    bash scripts/vscode-node-modules.sh
    log "packaging the extension"
    (cd "$ext" && npm run --silent package >/dev/null)

    if [ -z "${FXLS_E2E_NO_NETNS:-}" ] && unshare --net true 2>/dev/null; then
        log "running in a network namespace with loopback only"
        export FXLS_E2E_START=$start
        exec unshare --net bash -c 'ip link set lo up && exec bash "$0" --inside-netns' "$repo/scripts/vscode-e2e.sh"
    fi
    log "unshare --net not available: running in the host network (loopback only by configuration)"
fi

# ---- the test (loopback only) ------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/fxls-vscode-e2e.XXXXXX")
out=${FXLS_E2E_OUT:-$ext/e2e/out}
mkdir -p "$work/user/User" "$work/extensions" "$work/project/.vscode" "$out"
cp examples/control_flow.py examples/clean_mlp.py "$work/project/"
cat > "$work/project/.vscode/settings.json" <<EOF
{ "fxls.interpreter": "$repo/.venv/bin/python" }
EOF
cat > "$work/user/User/settings.json" <<'EOF'
{
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "workbench.startupEditor": "none",
  "workbench.enableExperiments": false,
  "workbench.tips.enabled": false,
  "security.workspace.trust.enabled": false,
  "chat.commandCenter.enabled": false,
  "editor.codeLens": true,
  "files.autoSave": "off"
}
EOF
cs="$home/node_modules/.bin/code-server"
export EXTENSIONS_GALLERY='{"serviceUrl":"http://127.0.0.1:9/gallery","itemUrl":"http://127.0.0.1:9/item"}'
common=(--user-data-dir "$work/user" --extensions-dir "$work/extensions" --config "$work/config.yaml")
: > "$work/config.yaml"
log "installing fxls.vsix into code-server"
"$cs" "${common[@]}" --install-extension "$ext/fxls.vsix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log "starting code-server on 127.0.0.1:$port"
"$cs" "${common[@]}" --auth none --bind-addr "127.0.0.1:$port" --disable-telemetry \
    --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    "$work/project" >"$work/code-server.log" 2>&1 &
cs_pid=$!
cleanup() { kill "$cs_pid" 2>/dev/null || true; wait "$cs_pid" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 1 120); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; then break; fi
    kill -0 "$cs_pid" 2>/dev/null || { cat "$work/code-server.log"; exit 1; }
    sleep 0.5
done

log "driving the workbench"
status=0
FXLS_E2E_PROJECT="$work/project" NODE_PATH="$home/node_modules" timeout 600 node "$ext/e2e/run.cjs" \
    "http://127.0.0.1:$port/?folder=$work/project" "$out" || status=$?
if [ $status -ne 0 ]; then
    echo "--- code-server log (tail)"; tail -n 40 "$work/code-server.log"
    find "$work/user" -name '*fxls*.log' -path '*exthost*' -exec tail -n 40 {} + 2>/dev/null || true
fi
if [ $status -eq 0 ] && [ -z "${FXLS_E2E_KEEP:-}" ]; then
    cleanup
    rm -rf "$work"
    log "done: passed; screenshots in $out"
else
    log "done (exit $status); screenshots in $out, logs and profile in $work"
fi
exit $status
