"""The server process never imports torch or fxcore (user code and torch live in the worker)."""

from __future__ import annotations

import subprocess
import sys


def test_server_modules_do_not_import_torch():
    code = (
        "import sys, fxls.server.app, fxls.cli, fxls.fixes, fxls.analysis_runs.runs; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'fxcore')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
