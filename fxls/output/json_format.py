"""The JSON contract of ``fxls check --format json`` (SPEC: version 1, LSP positions)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fxls.output.located import SourceCache, locate, pass_origin, tracer_of
from fxls.output.setting_problems import problem_entries
from fxls.output.statistics import Statistics
from fxls.project.notebooks import NotebookCells
from fxls.project.settings import SettingProblem
from fxls.report import FileReport, ModuleReport, PassReport


def report_to_json(report: FileReport, sources: SourceCache) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": report.path,
        "modules": [_module(m, sources.cells(report.path)) for m in report.modules],
        "diagnostics": [_diagnostic(item, report.path) for item in locate(report, sources)],
    }
    if report.targets and not report.default_targets:  # additive: the tracers, and why
        entry["targets"] = {"targets": list(report.targets), "because": report.targets_because}
    if report.passes:  # additive key, only for files with FX passes
        entry["passes"] = [_pass(p) for p in report.passes]
    return entry


def _pass(report: PassReport) -> dict[str, Any]:
    """A pass and what it did to each graph it ran on (counts; ``fxls graph FILE::pass``
    shows the code before and after)."""
    return {
        "name": report.name,
        "kind": report.kind,
        "graphs_from": report.graphs_from,
        "runs": [
            {"graph": run.graph, "added": len(run.added), "removed": len(run.removed),
             "rewired": len(run.rewired), "problem": run.problem}
            for run in report.runs
        ],
    }


def _module(module: ModuleReport, cells: NotebookCells | None) -> dict[str, Any]:
    built_by = module.entry
    if cells is not None and built_by is not None:  # its line, in a notebook's cell
        built_by = cells.relabel(built_by)
    entry: dict[str, Any] = {"name": module.name, "status": module.status,
                             "nodes": module.node_count, "via": module.via,
                             "entry": built_by}
    if module.reason is not None:
        entry["reason"] = module.reason
    if module.targets and set(module.targets) != {"symbolic_trace"}:
        # additive: the class's status under each tracer it targets, when not tracing alone
        entry["targets"] = dict(module.targets)
    return entry


def _diagnostic(item: Any, own_path: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "code": item.diagnostic.code,
        "severity": item.diagnostic.severity,
        "message": item.diagnostic.message,
        "module": item.diagnostic.module,
        "range": {
            "start": {"line": item.start.line, "character": item.start.character},
            "end": {"line": item.end.line, "character": item.end.character},
        },
    }
    if item.path != own_path:
        # found while tracing this file, located in another (a submodule defined there)
        entry["path"] = item.path
    if item.cell is not None:  # additive: a notebook's cell (0-based), the range in it
        entry["cell"] = item.cell
    target = tracer_of(item.diagnostic)
    if target is not None:  # additive: the tracer whose problem it is
        entry["target"] = target
    entry.update(pass_origin(item.diagnostic))  # additive: found in an FX pass
    return entry


def format_json(
    reports: list[FileReport], sources: SourceCache, statistics: Statistics | None = None,
    setting_problems: Sequence[SettingProblem] = (),
) -> str:
    document: dict[str, Any] = {
        "version": 1, "files": [report_to_json(r, sources) for r in reports]
    }
    if setting_problems:  # additive key, only when a setting was bad or refused
        document["settings_problems"] = problem_entries(setting_problems)
    if statistics is not None:  # additive key, only when asked for (--statistics)
        document["statistics"] = statistics.to_dict()
    return json.dumps(document, indent=2) + "\n"
