"""The sandbox modes a job can run in, and ``fxls check`` of a folder in one of them, shared by
the tests that check every mode through the CLI and the worker API.

The modes are chosen by an independent probe of the kernel (``unshare``), not by the code
under test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _namespaces_allowed() -> bool:
    """Unprivileged user + PID + network namespaces, asked of the kernel by ``unshare``."""
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-Urpnf", "--mount-proc", "true"], capture_output=True)
    return done.returncode == 0


NAMESPACES = _namespaces_allowed()
needs_namespaces = pytest.mark.skipif(not NAMESPACES, reason="no user namespaces here")
#: each mode's environment: job processes cloned into their namespaces, made behind a relay,
#: no namespaces
MODES = {"clone": {}, "relay": {"FXLS_SANDBOX_CLONE": "0"},
         "no-namespaces": {"FXLS_SANDBOX_NAMESPACES": "0"}}
#: the modes as the params of a fixture, those that need namespaces skipped where there are none
EACH_MODE = [pytest.param("clone", marks=needs_namespaces),
             pytest.param("relay", marks=needs_namespaces),
             "no-namespaces"]


def check_in_mode(folder: Path, mode: str, *options: str,
                  timeout: float) -> dict[str, dict[str, Any]]:
    """``fxls check --format json`` of ``folder`` in ``mode`` (``options`` before the path),
    which must find an error; each file's JSON report by file name."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **MODES[mode]}
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", *options, "."],
        capture_output=True, text=True, timeout=timeout, cwd=folder, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}
