"""Reading a workspace file as a file: every reader of fxls (source text, on-disk texts for
spans, the folder's import scan, dependencies) returns at once for a FIFO, refuses what is
not a regular file and reads a bounded amount. Calls that blocked before run in a thread
with a deadline, so the old code fails instead of hanging."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fxls.project.python_source import read_python_source, read_python_source_or_replace
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.dependencies import report_files
from fxls.server.lsp_convert import RangeConverter, on_disk
from fxls.server.workspace_imports import workspace_imports

DEADLINE_S = 10.0


def _within_deadline(call: Callable[[], Any]) -> Any:
    """``call()``'s result or exception, failing the test if it takes over the deadline
    (the thread is a daemon: a blocked read cannot hold pytest's exit)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as error:  # handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), "the read blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "b.py"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_without_blocking(fifo: Path):
    with pytest.raises(OSError, match="a FIFO, not a regular file"):
        _within_deadline(lambda: read_python_source(fifo))
    assert _within_deadline(lambda: read_python_source_or_replace(fifo)) == ""


def test_a_symbolic_link_loop_and_a_broken_link_are_refused(tmp_path: Path):
    (tmp_path / "l1.py").symlink_to("l2.py")
    (tmp_path / "l2.py").symlink_to("l1.py")
    (tmp_path / "gone.py").symlink_to("nothing.py")
    with pytest.raises(OSError, match="a symbolic link loop"):
        read_python_source(tmp_path / "l1.py")
    with pytest.raises(OSError, match=r"a broken symbolic link \(to nothing.py\)"):
        read_python_source(tmp_path / "gone.py")


def test_a_file_over_8_mb_is_refused_and_one_at_the_limit_is_read(tmp_path: Path):
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (8 << 20) + b"\n")
    with pytest.raises(OSError, match=r"the file is 8\.0 MB, over the 8 MB fxls reads"):
        read_python_source(big)
    assert read_python_source_or_replace(big) == ""
    big.write_bytes(b"#" * ((8 << 20) - 1) + b"\n")
    assert len(read_python_source(big)) == 8 << 20


def test_the_on_disk_text_of_a_span_into_a_fifo_is_empty(fifo: Path):
    assert _within_deadline(lambda: on_disk(str(fifo))).text == ""


def test_spans_into_a_link_loop_are_placed(tmp_path: Path):
    loop = tmp_path / "l1.py"
    loop.symlink_to("l2.py")
    (tmp_path / "l2.py").symlink_to("l1.py")
    span = Span(str(loop), 3, 3, 0, 4)
    report = FileReport(str(tmp_path / "m.py"), [], [Diagnostic("FX004", "error", "x", span)])
    assert report_files(report) == {str(loop)}
    converter = RangeConverter(str(tmp_path / "m.py"), "x = 1\n", "utf-16")
    location = converter.location(span)
    assert location.uri == loop.as_uri()
    assert (location.range.start.line, location.range.start.character) == (0, 0)


def test_the_folder_import_scan_skips_odd_files(tmp_path: Path, fifo: Path):
    (tmp_path / "a.py").write_text("import alpha\n", encoding="utf-8")
    (tmp_path / "l1.py").symlink_to("l2.py")
    (tmp_path / "l2.py").symlink_to("l1.py")
    (tmp_path / "z.py").write_text("import omega\n", encoding="utf-8")
    assert _within_deadline(lambda: workspace_imports([str(tmp_path)])) == ["alpha", "omega"]


def test_hover_and_inlay_look_past_spans_into_a_link_loop(tmp_path: Path):
    """The analysed code can forge its report: a node whose span points into a symbolic
    link loop neither fails the inlay hints nor the hover lookup of the real document."""
    from fxls.report import ModuleReport, NodeInfo, TraceStatus
    from fxls.server.inlay import shape_hints
    from fxls.server.report_lookup import _innermost

    model = tmp_path / "m.py"
    model.write_text("y = x\n")
    os.symlink(tmp_path / "l2.py", tmp_path / "l1.py")
    os.symlink(tmp_path / "l1.py", tmp_path / "l2.py")
    loop = Span(str(tmp_path / "l1.py"), 1, 1, 0, 5)
    real = Span(str(model), 1, 1, 4, 5)
    nodes = [NodeInfo("a", "call_function", "f", "()", "{}", [], loop, [2, 3]),
             NodeInfo("b", "call_function", "f", "()", "{}", [], real, [4])]
    report = FileReport(str(model), [ModuleReport("M", TraceStatus.TRACED, 2, nodes=nodes)])
    assert shape_hints(report, str(model), model.read_text()) == [(1, 1, ": [4]")]
    assert _innermost([(loop, "a"), (real, "b")], str(model), 1, 4) == ["b"]
