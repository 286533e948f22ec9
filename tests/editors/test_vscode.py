"""The VS Code extension: its unit tests (node --test, `vscode` stubbed) and the end-to-end
run in a real VS Code (code-server in headless Chromium, loopback only)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


def _run(command: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "npm_config_audit": "false",
                               "npm_config_fund": "false"})


@needs_npm
def test_extension_unit_tests_and_package():
    if not (EXTENSION / "node_modules").is_dir():
        done = _run(["npm", "ci", "--loglevel=error"], EXTENSION, 600)
        assert done.returncode == 0, done.stderr[-3000:]
    done = _run(["npm", "test"], EXTENSION, 600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert " fail 0" in done.stdout
    done = _run(["npm", "run", "package"], EXTENSION, 600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (EXTENSION / "fxls.vsix").stat().st_size > 10_000


@needs_npm
@pytest.mark.skipif(shutil.which("apt-get") is None and shutil.which("chromium") is None,
                    reason="needs Debian's chromium (or apt-get to install it)")
def test_extension_in_a_real_vs_code():
    # A GUI driven through a browser on a loaded 2-core machine: one retry, and both runs'
    # output if the second fails too.
    first = _run(["bash", "scripts/vscode-e2e.sh"], REPO, 1500)
    if first.returncode == 0:
        return
    second = _run(["bash", "scripts/vscode-e2e.sh"], REPO, 1500)
    assert second.returncode == 0, (
        "first run:\n" + (first.stdout + first.stderr)[-3000:]
        + "\nsecond run:\n" + (second.stdout + second.stderr)[-3000:]
    )
