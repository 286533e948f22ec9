"""``path:line:col: CODE message``, one diagnostic per line (1-based line and column)."""

from __future__ import annotations

from fxls.output.located import SourceCache, locate
from fxls.output.statistics import Statistics, format_statistics_text
from fxls.report import FileReport
from fxls.source_text import UTF32


def format_text(
    reports: list[FileReport], sources: SourceCache, statistics: Statistics | None = None
) -> str:
    """The diagnostics; then, when given, the statistics after a blank line."""
    lines = []
    for report in reports:
        for item in locate(report, sources, UTF32, once=True):
            d = item.diagnostic
            where = f"{item.path}:{item.start.line + 1}:{item.start.character + 1}"
            lines.append(f"{where}: {d.code} {d.message}")
    text = "\n".join(lines) + ("\n" if lines else "")
    if statistics is not None:
        text += ("\n" if text else "") + format_statistics_text(statistics)
    return text
