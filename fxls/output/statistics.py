"""Coverage of a check (``fxls check --statistics``): how many classes were traced, traced
with problems, not constructed or failed, per file and in total, and why each untraced one
was not traced; and how many FX passes ran, on how many graphs, and which had problems.

A bridge between reports and coverage figures: the text table, the JSON ``"statistics"``
key and the SARIF run property all come from one :class:`Statistics`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxls.project.notebooks import NotebookCells
from fxls.project.source_text import Position
from fxls.report import FileReport, ModuleReport, PassReport

#: module statuses in the order the figures show them, with the words the text uses
STATUS_LABELS = {
    "traced": "traced",
    "partial": "partial",
    "skipped": "not constructed",
    "failed": "failed",
}
#: diagnostics that mean the file itself did not run (no class of it could be looked at)
_FILE_FAILURES = ("FX100", "FX102")
#: where a pass problem says which graph it is about (the text says it already)
_WHERE = re.compile(
    r"\s*\((?:in the (?:export )?graph of|raised by the pass) (?:[^()]|\([^()]*\))*\)\s*$")


@dataclass(slots=True)
class Coverage:
    """Counts of classes by status."""

    traced: int = 0
    partial: int = 0
    skipped: int = 0
    failed: int = 0

    @property
    def classes(self) -> int:
        return self.traced + self.partial + self.skipped + self.failed

    @property
    def traced_share(self) -> float | None:
        """Share of classes with a graph (``traced`` or ``partial``); None without classes."""
        return (self.traced + self.partial) / self.classes if self.classes else None

    def count(self, status: str) -> None:
        if status in STATUS_LABELS:
            setattr(self, status, getattr(self, status) + 1)

    def add(self, other: Coverage) -> None:
        for status in STATUS_LABELS:
            setattr(self, status, getattr(self, status) + getattr(other, status))

    def summary(self) -> str:
        """``42 classes: 30 traced, 4 partial, 6 not constructed, 2 failed (81% traced)``"""
        counts = ", ".join(f"{getattr(self, s)} {label}" for s, label in STATUS_LABELS.items())
        noun = "class" if self.classes == 1 else "classes"
        share = f" ({_percent(self.traced_share)} traced)" if self.classes else ""
        return f"{self.classes} {noun}: {counts}{share}"

    def to_dict(self) -> dict[str, Any]:
        share = self.traced_share
        return {
            "classes": self.classes,
            **{status: getattr(self, status) for status in STATUS_LABELS},
            "traced_share": round(share, 4) if share is not None else None,
        }


@dataclass(slots=True)
class NotTraced:
    """A class without a graph (status ``skipped`` or ``failed``), or a whole file that did
    not run (``name`` None, status ``not analysed``), and why."""

    path: str
    name: str | None
    status: str
    reason: str
    line: int | None = None
    #: in a notebook: the cell (0-based among all cells) ``line`` counts in
    cell: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "module": self.name, "status": self.status,
                "line": self.line, **_cell_key(self), "reason": self.reason}


@dataclass(slots=True)
class PassCounts:
    """FX passes found, how many ran, their runs (pass x graph) and those with problems."""

    found: int = 0
    run: int = 0
    runs: int = 0
    with_problems: int = 0

    def count(self, report: PassReport) -> None:
        self.found += 1
        self.run += bool(report.runs)
        self.runs += len(report.runs)
        self.with_problems += report.has_problem

    def add(self, other: PassCounts) -> None:
        for name in ("found", "run", "runs", "with_problems"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summary(self) -> str:
        """``3 FX passes: 4 runs on graphs, 1 with problems, 1 not run``"""
        noun = "pass" if self.found == 1 else "passes"
        text = (f"{self.found} FX {noun}: {self.runs} run{'s' if self.runs != 1 else ''} "
                f"on graphs, {self.with_problems} with problems")
        if self.found > self.run:
            text += f", {self.found - self.run} not run"
        return text

    def to_dict(self) -> dict[str, int]:
        return {"found": self.found, "run": self.run, "runs": self.runs,
                "with_problems": self.with_problems}


@dataclass(slots=True)
class PassProblem:
    """A pass's first problem on one graph."""

    path: str
    name: str
    graph: str
    problem: str
    line: int | None = None
    cell: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "pass": self.name, "graph": self.graph, "line": self.line,
                **_cell_key(self), "problem": self.problem}


@dataclass(slots=True)
class ClassTargets:
    """A class's status under each tracer it targets, when export or compile is one."""

    path: str
    name: str
    statuses: dict[str, str]
    line: int | None = None
    cell: int | None = None

    def summary(self) -> str:
        """``symbolic_trace traced · export exported · compile 2 graph breaks``"""
        return " · ".join(f"{target} {status}" for target, status in self.statuses.items())

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "module": self.name, "line": self.line,
                **_cell_key(self), "targets": dict(self.statuses)}


@dataclass(slots=True)
class FileCoverage:
    path: str
    coverage: Coverage
    #: the file itself did not run (FX100/FX102 without any class found)
    not_analysed: bool = False
    passes: PassCounts = field(default_factory=PassCounts)


@dataclass(slots=True)
class Statistics:
    files: list[FileCoverage] = field(default_factory=list)
    total: Coverage = field(default_factory=Coverage)
    not_traced: list[NotTraced] = field(default_factory=list)
    passes: PassCounts = field(default_factory=PassCounts)
    pass_problems: list[PassProblem] = field(default_factory=list)
    class_targets: list[ClassTargets] = field(default_factory=list)

    @property
    def files_not_analysed(self) -> int:
        return sum(f.not_analysed for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``"statistics"`` key (additive to the version 1 document)."""
        return {
            **self.total.to_dict(),
            "files_not_analysed": self.files_not_analysed,
            "files": [
                {"path": f.path, **f.coverage.to_dict(), "not_analysed": f.not_analysed,
                 "passes": f.passes.to_dict()}
                for f in self.files
            ],
            "not_traced": [item.to_dict() for item in self.not_traced],
            "passes": {**self.passes.to_dict(),
                       "problems": [item.to_dict() for item in self.pass_problems]},
            **({"targets": [item.to_dict() for item in self.class_targets]}
               if self.class_targets else {}),
        }


def _no_cells(path: str) -> NotebookCells | None:
    return None


def collect_statistics(
    reports: list[FileReport],
    cells_of: Callable[[str], NotebookCells | None] = _no_cells,
) -> Statistics:
    """The figures of ``reports``; ``cells_of`` gives a notebook's cells (its lines are
    shown in them)."""
    statistics = Statistics()
    for report in reports:
        cells = cells_of(report.path)
        coverage = Coverage()
        for module in report.modules:
            line = _in_cell(module.span.line if module.span is not None else None, cells)
            coverage.count(module.status)
            if set(module.targets) - {"symbolic_trace"}:
                statistics.class_targets.append(ClassTargets(
                    report.path, module.name, dict(module.targets), *line))
            if module.status in ("skipped", "failed"):
                reason = _relabel(why_not_traced(module, report), report.path, cells)
                statistics.not_traced.append(NotTraced(
                    report.path, module.name, module.status, reason, *line))
        failure = next((d for d in report.diagnostics if d.code in _FILE_FAILURES), None)
        not_analysed = False
        if failure is not None and not report.modules:
            not_analysed = True
            reason = _relabel(f"{failure.code} {failure.message}", report.path, cells)
            statistics.not_traced.append(NotTraced(report.path, None, "not analysed", reason,
                                                   *_in_cell(failure.span.line, cells)))
        passes = PassCounts()
        for pass_report in report.passes:
            passes.count(pass_report)
            statistics.pass_problems += _pass_problems(report.path, pass_report, cells)
        statistics.files.append(FileCoverage(report.path, coverage, not_analysed, passes))
        statistics.total.add(coverage)
        statistics.passes.add(passes)
    return statistics


def _pass_problems(path: str, report: PassReport, cells: NotebookCells | None
                   ) -> list[PassProblem]:
    line = _in_cell(report.span.line if report.span is not None else None, cells)
    return [PassProblem(path, report.name, run.graph, _relabel(run.problem, path, cells), *line)
            for run in report.runs if run.problem is not None]


def _in_cell(line: int | None, cells: NotebookCells | None) -> tuple[int | None, int | None]:
    """(line, cell): a 1-based line of a notebook's source as the 1-based line in its cell."""
    if line is None or cells is None:
        return line, None
    where = cells.to_cell(Position(line - 1, 0))
    return where.line + 1, where.cell


def _relabel(text: str, path: str, cells: NotebookCells | None) -> str:
    return text if cells is None else cells.relabel(text, os.path.basename(path))


def _cell_key(item: NotTraced | PassProblem | ClassTargets) -> dict[str, int]:
    return {} if item.cell is None else {"cell": item.cell}


def why_not_traced(module: ModuleReport, report: FileReport) -> str:
    """The module's own ``reason``, else the first diagnostic about it (e.g. FX101 with the
    ``init`` pragma to add, FX004 with what its constructor raised)."""
    if module.reason:
        return module.reason
    about = next((d for d in report.diagnostics if d.module == module.name), None)
    if about is not None:
        return f"{about.code} {about.message}"
    failure = next((d for d in report.diagnostics if d.code in _FILE_FAILURES), None)
    if failure is not None:
        return f"{failure.code} {failure.message}"
    return "no reason recorded"


def format_statistics_text(statistics: Statistics) -> str:
    """The per-file table (only for several files), the total line, then each class that
    has no graph with its reason."""
    lines: list[str] = []
    shown = [f for f in statistics.files if f.coverage.classes or f.not_analysed]
    if len(statistics.files) > 1 and shown:
        lines += _table(shown)
        hidden = len(statistics.files) - len(shown)
        if hidden:
            lines.append(f"({hidden} file{'s' if hidden > 1 else ''} without nn.Module "
                         "classes not shown)")
    total = statistics.total.summary()
    if statistics.files_not_analysed:
        count = statistics.files_not_analysed
        total += f"; {count} file{'s' if count > 1 else ''} not analysed"
    lines.append(total)
    if statistics.passes.found:
        lines.append(statistics.passes.summary())
    for status, title in (("skipped", "Not constructed"), ("failed", "Failed"),
                          ("not analysed", "Not analysed")):
        items = [item for item in statistics.not_traced if item.status == status]
        if items:
            lines.append(f"{title}:")
            lines += [f"  {_where(item)}: {item.reason}" for item in items]
    if statistics.class_targets:
        lines.append("Targets:")
        lines += [f"  {_where(item)}: {item.summary()}" for item in statistics.class_targets]
    if statistics.pass_problems:
        lines.append("Passes with problems:")
        lines += [f"  {_where(item)} on {item.graph}: {_WHERE.sub('', item.problem)}"
                  for item in statistics.pass_problems]
    return "\n".join(lines) + "\n"


def _where(item: NotTraced | PassProblem | ClassTargets) -> str:
    line = item.line if item.cell is None else f"cell {item.cell + 1}:{item.line}"
    place = item.path if item.line is None else f"{item.path}:{line}"
    return place if item.name is None else f"{place} {item.name}"


_COLUMNS = ("classes", *STATUS_LABELS)


def _table(files: list[FileCoverage]) -> list[str]:
    headers = ["file", "classes", *STATUS_LABELS.values(), "traced %"]
    rows = []
    for f in files:
        cells = [str(getattr(f.coverage, c)) for c in _COLUMNS]
        share = "not analysed" if f.not_analysed else _percent(f.coverage.traced_share)
        rows.append([f.path, *cells, share])
    widths = [max(len(row[i]) for row in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _percent(share: float | None) -> str:
    """Rounded to the nearest percent, but never 100% unless every class has a graph."""
    if share is None:
        return "-"
    percent = round(share * 100)
    if percent == 100 and share < 1:
        percent = 99
    return f"{percent}%"
