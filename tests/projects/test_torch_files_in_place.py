"""Files of torch's own, checked where they live (a torch developer's loop). fxcore takes
torch's frames for its own and skips them when it looks for the user's line; the file being
checked is the user's all the same, so its problems are at its lines, not at its classes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

TORCH = Path(importlib.util.find_spec("torch").origin).parent


def _check(path: Path, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", "json",
                           str(path)], capture_output=True, text=True, timeout=600, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    (report,) = json.loads(done.stdout)["files"]
    return report


def _position(path: Path, text: str) -> tuple[int, int]:
    """The (0-based) line and column where ``text`` first appears in the file."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if text in line:
            return number, line.index(text)
    raise AssertionError(f"{text!r} not in {path}")


def test_a_modules_trace_problems_are_at_its_lines_in_a_file_of_torch(tmp_path: Path) -> None:
    """torch.ao's equalization observer branches on ``x_orig.ndim``: symbolic tracing stops
    there (torch.fx raises a TraceError at that comparison), and fxls says so at it."""
    path = TORCH / "ao" / "quantization" / "fx" / "_equalize.py"
    report = _check(path, tmp_path)
    line, column = _position(path, "x_orig.ndim < 2")
    found = [d for d in report["diagnostics"] if d["module"] == "_InputEqualizationObserver"]
    assert {"code": "FX001", "start": {"line": line, "character": column},
            "end": {"line": line, "character": column + len("x_orig.ndim < 2")}} in [
        {"code": d["code"], **d["range"]} for d in found], found
    class_line, _ = _position(path, "class _InputEqualizationObserver")
    assert all(d["range"]["start"]["line"] != class_line for d in found), found
