#!/usr/bin/env bash
# Install fxls and its test tools into .venv/ at the repo root. Idempotent.
# torch is pinned to the CPU wheel kept on these machines *before* fxls is installed, so
# that pip never resolves torch itself (that would download a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    pip install "torch==${FXLS_TORCH_VERSION:-2.13.0}"
fi
stamp=.venv/.fxls-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    pip install -e ".[test]"
    touch "$stamp"
fi
# every fxls process (CLI, server, worker, job) reads fxls and fxcore as bytecode even where
# PYTHONDONTWRITEBYTECODE is set (it is on CI): compiled once here, not once per process
.venv/bin/python -m compileall -q fxls fxcore
