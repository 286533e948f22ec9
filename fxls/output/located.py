"""Reports with editor positions: the one place CLI output converts spans.

Spans in a report are Python units (1-based lines, UTF-8 byte columns); outputs show
LSP positions (0-based lines, UTF-16 code units) in JSON/SARIF and 1-based code-point
columns in text. In a notebook, positions are in the code cell they fall in (``cell``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from fxls.codes import target_of
from fxls.project.notebooks import NotebookCells
from fxls.project.python_source import read_python_source_or_replace
from fxls.project.source_text import UTF16, Position, SourceText
from fxls.report import Diagnostic, FileReport


@dataclass(slots=True)
class LocatedDiagnostic:
    diagnostic: Diagnostic
    start: Position
    end: Position
    #: where the span lives, as shown to the user (the report path for this file)
    path: str
    #: in a notebook: the cell (0-based, among all cells) ``start`` and ``end`` are in
    cell: int | None = None


class SourceCache:
    """Line indexes of files diagnostics point into, read once each."""

    def __init__(self) -> None:
        self._indexes: dict[str, SourceText] = {}
        #: the files checked in this run, by resolved path: the path as the user gave it
        self._given: dict[str, str] = {}
        #: (resolved file, code, line, column) of each diagnostic a file's own report has
        self._own: set[tuple[str, str, int, int]] = set()
        #: the notebooks' cells, by resolved path
        self._cells: dict[str, NotebookCells] = {}

    def add(self, path: str, text: str, cells: NotebookCells | None = None) -> None:
        """``text`` is what was analysed of ``path``; ``cells`` where a notebook's cells
        are in it."""
        key = _resolved(path)
        self._indexes[key] = SourceText(text)
        self._given.setdefault(key, path)
        if cells is not None:
            self._cells[key] = cells

    def claim(self, reports: list[FileReport]) -> None:
        """The diagnostics each checked file reports in its own report: another file's
        report leaves them out (a sibling's problem reached from here is shown once, under
        the sibling's path as given)."""
        for report in reports:
            own = _resolved(report.path)
            for d in report.diagnostics:
                if _resolved(d.span.file) == own:
                    self._own.add((own, d.code, d.span.line, d.span.col))

    def shown_path(self, file: str) -> str:
        """A checked file as the user named it; any other file as it is."""
        return self._given.get(_resolved(file), file)

    def reported_by_its_file(self, file: str, code: str, line: int, col: int) -> bool:
        return (_resolved(file), code, line, col) in self._own

    def cells(self, path: str) -> NotebookCells | None:
        return self._cells.get(_resolved(path))

    def index(self, path: str) -> SourceText:
        key = _resolved(path)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = SourceText(read_python_source_or_replace(key))
        return index


def _resolved(path: str) -> str:
    # realpath, not Path.resolve: a span (reports are untrusted) into a symbolic-link loop
    # is a path like any other, not a RuntimeError that loses every file's output
    return os.path.realpath(path)


def locate(
    report: FileReport, sources: SourceCache, encoding: str = UTF16, once: bool = False
) -> list[LocatedDiagnostic]:
    """The report's diagnostics with positions; ``once``: for flat outputs (text, SARIF),
    without those located in another checked file whose own report has them."""
    located = []
    own_file = _resolved(report.path)
    for diagnostic in report.diagnostics:
        span = diagnostic.span
        mine = _resolved(span.file) == own_file
        if once and not mine and sources.reported_by_its_file(span.file, diagnostic.code, span.line,
                                                     span.col):
            continue
        start, end = sources.index(span.file).to_range(span, encoding)
        shown = report.path if mine else sources.shown_path(span.file)
        item = LocatedDiagnostic(diagnostic, start, end, shown)
        cells = sources.cells(span.file)
        located.append(item if cells is None else _in_cell(item, cells, span.file))
    return located


def _in_cell(item: LocatedDiagnostic, cells: NotebookCells, file: str) -> LocatedDiagnostic:
    """``item`` in its notebook cell; the lines of the notebook its message names too."""
    start, end = cells.to_cell_range(item.start, item.end)
    message = cells.relabel(item.diagnostic.message, os.path.basename(file))
    item.diagnostic = dataclasses.replace(item.diagnostic, message=message)
    item.cell = start.cell
    item.start = Position(start.line, start.character)
    item.end = Position(end.line, end.character)
    return item


def pass_origin(diagnostic: Diagnostic) -> dict[str, str]:
    """``{"pass": name, "graph": label}`` for a diagnostic found in a pass, else ``{}``."""
    origin: dict[str, str] = {}
    for key in ("pass", "graph"):
        value = diagnostic.data.get(key)
        if isinstance(value, str) and (key == "pass" or "pass" in origin):
            origin[key] = value
    return origin


def tracer_of(diagnostic: Diagnostic) -> str | None:
    """The tracer whose problem ``diagnostic`` is (``symbolic_trace``/``export``/``compile``);
    None for fxls's own (FX1xx) and for a problem of an FX pass (its ``pass`` says where)."""
    target = target_of(diagnostic.code)
    if target is None or "pass" in pass_origin(diagnostic):
        return None
    return target.value
