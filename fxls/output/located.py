"""Reports with editor positions: the one place CLI output converts spans.

Spans in a report are Python units (1-based lines, UTF-8 byte columns); outputs show
LSP positions (0-based lines, UTF-16 code units) in JSON/SARIF and 1-based code-point
columns in text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fxls.python_source import read_python_source_or_replace
from fxls.report import Diagnostic, FileReport
from fxls.source_text import UTF16, Position, SourceText


@dataclass(slots=True)
class LocatedDiagnostic:
    diagnostic: Diagnostic
    start: Position
    end: Position
    #: where the span lives, as shown to the user (the report path for this file)
    path: str


class SourceCache:
    """Line indexes of files diagnostics point into, read once each."""

    def __init__(self) -> None:
        self._indexes: dict[str, SourceText] = {}

    def add(self, path: str, text: str) -> None:
        self._indexes[str(Path(path).resolve())] = SourceText(text)

    def index(self, path: str) -> SourceText:
        key = str(Path(path).resolve())
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = SourceText(read_python_source_or_replace(key))
        return index


def locate(
    report: FileReport, sources: SourceCache, encoding: str = UTF16
) -> list[LocatedDiagnostic]:
    located = []
    own_file = str(Path(report.path).resolve())
    for diagnostic in report.diagnostics:
        span = diagnostic.span
        start, end = sources.index(span.file).to_range(span, encoding)
        shown = report.path if str(Path(span.file).resolve()) == own_file else span.file
        located.append(LocatedDiagnostic(diagnostic, start, end, shown))
    return located


def pass_origin(diagnostic: Diagnostic) -> dict[str, str]:
    """``{"pass": name, "graph": label}`` for a diagnostic found in a pass, else ``{}``."""
    origin: dict[str, str] = {}
    for key in ("pass", "graph"):
        value = diagnostic.data.get(key)
        if isinstance(value, str) and (key == "pass" or "pass" in origin):
            origin[key] = value
    return origin
