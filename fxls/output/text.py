"""``path:line:col: CODE message``, one diagnostic per line (1-based line and column); in a
notebook ``path:cell N:line:col: CODE message`` (N 1-based among all cells, line in the cell)."""

from __future__ import annotations

from collections.abc import Sequence

from fxls.output.located import SourceCache, locate
from fxls.output.statistics import Statistics, format_statistics_text
from fxls.project.settings import SettingProblem
from fxls.project.source_text import UTF32
from fxls.report import FileReport


def format_text(
    reports: list[FileReport], sources: SourceCache, statistics: Statistics | None = None,
    setting_problems: Sequence[SettingProblem] = (),
) -> str:
    """The diagnostics; then, when given, the statistics after a blank line. (Setting
    problems go to stderr, before the run: ``setting_problems.problem_lines``.)"""
    lines = []
    for report in reports:
        for item in locate(report, sources, UTF32, once=True):
            d = item.diagnostic
            cell = "" if item.cell is None else f"cell {item.cell + 1}:"  # as ruff names it
            where = f"{item.path}:{cell}{item.start.line + 1}:{item.start.character + 1}"
            lines.append(f"{where}: {d.code} {d.message}")
    text = "\n".join(lines) + ("\n" if lines else "")
    if statistics is not None:
        text += ("\n" if text else "") + format_statistics_text(statistics)
    return text
