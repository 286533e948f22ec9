"""Units behind the LSP conventions: docs links, the ignore-on-line edit, the order in which
fixes are verified, and the single trace progress."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lsprotocol import types

from fxls.codes import CODES, doc_url
from fxls.fixes.base import Fix, TextEdit
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.code_actions import FixCache, _ignore_edit, _scan, asked_about
from fxls.server.progress import TraceProgress

DOCS = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"


def _github_anchors(markdown: str) -> set[str]:
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip().lower()
            anchors.add("".join(c for c in heading if c.isalnum() or c in " -_").replace(" ", "-"))
    return anchors


def test_every_code_links_to_its_published_section():
    anchors = _github_anchors(DOCS.read_text(encoding="utf-8"))
    for code in CODES:
        url = doc_url(code)
        assert url.startswith("https://github.com/fxls/fxls/blob/main/docs/diagnostics.md#")
        assert url.split("#", 1)[1] in anchors, code
    pyproject = (DOCS.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^Repository = "https://github.com/fxls/fxls"$', pyproject, re.MULTILINE)


def test_the_ignore_pragma_is_added_merged_or_left_alone():
    text = (
        "x = f(a)\n"
        "y = g(a)  # fxls: ignore[FX010]\n"
        "z = h(a)  # note\n"
        "w = k(a)  # fxls: ignore\n"
        's = """doc\n'
        'more""" + str(a)\n'
        "t = a + \\\n"
        "    b\n"
    )
    comments, in_string = _scan(text)
    lines = text.split("\n")

    def edit(line: int) -> TextEdit | None:
        return _ignore_edit(lines[line - 1], line, "FX013", comments.get(line))

    assert edit(1) == TextEdit(1, 8, 1, 8, "  # fxls: ignore[FX013]")
    assert edit(2) == TextEdit(2, 24, 2, 31, "[FX010,FX013]")
    assert edit(3) == TextEdit(3, 16, 3, 16, "  # fxls: ignore[FX013]")
    assert edit(4) is None  # every code is ignored there already
    assert 5 in in_string and 6 not in in_string
    assert edit(7) is None  # a backslash continues the line


def test_a_bare_cursor_asks_about_its_line_and_a_selection_about_what_it_touches():
    def r(line: int, col: int, end_line: int, end_col: int) -> types.Range:
        return types.Range(types.Position(line, col), types.Position(end_line, end_col))

    problem = r(10, 17, 10, 29)  # `self.proj(x)` in `unused = self.proj(x)`
    assert asked_about(problem, r(10, 8, 10, 8))  # Ctrl+. at the start of the line
    assert asked_about(problem, r(10, 40, 10, 40))  # ... or past its end
    assert asked_about(r(9, 4, 11, 2), r(10, 0, 10, 0))  # a problem over several lines
    assert not asked_about(problem, r(11, 17, 11, 17))  # the next line
    assert not asked_about(problem, r(10, 0, 10, 8))  # a selection beside it
    assert asked_about(problem, r(10, 0, 10, 17))  # a selection that touches it


def _report(n: int) -> FileReport:
    diagnostics = [Diagnostic(code="FX013", severity="warning", message="m",
                              span=Span("/m.py", i + 1, i + 1, 0, 5)) for i in range(n)]
    return FileReport(path="/m.py", diagnostics=diagnostics)


def _one_fix_per_line(monkeypatch: Any) -> None:
    """Each diagnostic gets one fix, which empties its line."""
    def fixes_for(text: str, diagnostic: Diagnostic) -> list[Fix]:
        line = diagnostic.span.line
        return [Fix(f"fix {line}", "FX013", [TextEdit(line, 0, line, 5, "")])]

    monkeypatch.setattr("fxls.server.code_actions.fixes_for", fixes_for)


async def test_the_fixes_a_request_waits_for_are_verified_first(monkeypatch):
    _one_fix_per_line(monkeypatch)
    order: list[int] = []
    gate = asyncio.Event()

    async def analyze(variant: str, lane: int) -> Any:
        order.append(variant.split("\n").index(""))  # the line the fix emptied
        await gate.wait()
        return None

    text = "\n".join(f"line{i}" for i in range(1, 7)) + "\n"
    cache, report = FixCache(), _report(6)
    cache.reset(text, report)
    task = asyncio.ensure_future(cache.verify_all(text, report, analyze))
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == [0, 1]  # two re-traces at once
    cache.want([4])
    gate.set()
    assert await cache.wait(lambda: cache.decided([4]), 5.0)
    await task
    assert order[:3] == [0, 1, 4] and sorted(order) == [0, 1, 2, 3, 4, 5]
    assert cache.finished and cache.fixes == []  # nothing verified: nothing offered


async def test_verification_waits_for_a_quiet_moment_unless_a_request_asks(monkeypatch):
    _one_fix_per_line(monkeypatch)
    started: list[int] = []

    async def analyze(variant: str, lane: int) -> Any:
        started.append(variant.split("\n").index(""))
        return None

    text = "\n".join(f"line{i}" for i in range(1, 4)) + "\n"
    cache, report = FixCache(), _report(3)
    cache.reset(text, report)
    task = asyncio.ensure_future(cache.verify_all(text, report, analyze, quiet_s=60.0))
    for _ in range(5):
        await asyncio.sleep(0)
    assert started == []  # background work: not while saves may follow
    cache.want([2])
    assert await cache.wait(lambda: cache.decided([2]), 5.0)
    await task
    assert started[0] == 2 and sorted(started) == [0, 1, 2]

    # a newer analysis cancels it while it waits: the round ends, nothing offered, and a
    # request waiting on it is answered at once
    cache.reset(text, report)
    started.clear()
    task = asyncio.ensure_future(cache.verify_all(text, report, analyze, quiet_s=60.0))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert started == [] and cache.finished and cache.decided([0, 1, 2])
    assert not await cache.wait(lambda: cache.decided([0]) and bool(cache.fixes), 5.0)


def test_traces_at_once_share_one_progress_whose_percentage_never_goes_back():
    sent: list[tuple[str, Any]] = []

    class Progress:
        tokens: dict[str, Any] = {}

        async def create_async(self, token: str) -> None:
            return None

        def begin(self, token: str, value: Any) -> None:
            sent.append(("begin", value))

        def report(self, token: str, value: Any) -> None:
            sent.append(("report", value))

        def end(self, token: str, value: Any) -> None:
            sent.append(("end", value))

    server = SimpleNamespace(
        client_capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True)),
        work_done_progress=Progress())

    async def scenario() -> None:
        progress = TraceProgress(server)
        progress.start("a", "a.py", cancel=lambda: None)
        progress.start("b", "b.py", cancel=lambda: None)
        await asyncio.sleep(0)
        progress.advance("a", 0.5)
        progress.finish("a")
        progress.start("c", "c.py", cancel=lambda: None)  # more work: no step back
        progress.finish("b")
        progress.finish("c")

    asyncio.run(scenario())
    kinds = [kind for kind, _ in sent]
    assert kinds[0] == "begin" and kinds[-1] == "end" and kinds.count("begin") == 1
    assert sent[0][1].cancellable and sent[0][1].message == "tracing a.py, b.py"
    percentages = [value.percentage for kind, value in sent if kind != "end"]
    assert percentages == sorted(percentages) and percentages[0] == 0
