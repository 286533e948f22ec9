"""Lookups in a document's report: what is at a position (nodes, calls, a module, a pass).

Lookups take Python positions (1-based line, UTF-8 byte column); the server converts the
client's position once, with :mod:`fxls.project.source_text`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

from fxls.report import (
    BreakInfo,
    CallInfo,
    FileReport,
    ModuleReport,
    NodeInfo,
    PassGraphRun,
    PassReport,
    Span,
)


def _contains(span: Span, line: int, col: int) -> bool:
    if line < span.line or line > span.end_line:
        return False
    if line == span.line and col < span.col:
        return False
    return not (line == span.end_line and col > span.end_col)


def _extent(span: Span) -> tuple[int, int]:
    return (span.end_line - span.line, span.end_col - span.col)


_T = TypeVar("_T")


def _innermost(candidates: Iterable[tuple[Span | None, _T]], path: str, line: int,
               col: int) -> list[_T]:
    """Of ``candidates`` (span, item), the items whose span in ``path`` contains (line, col)
    and is the smallest there (several items may share it)."""
    target = os.path.realpath(path)
    hits = [(_extent(span), item) for span, item in candidates
            if span is not None and _contains(span, line, col)
            and os.path.realpath(span.file) == target]
    if not hits:
        return []
    smallest = min(extent for extent, _ in hits)
    return [item for extent, item in hits if extent == smallest]


def nodes_at(
    report: FileReport, path: str, line: int, col: int
) -> list[tuple[ModuleReport, NodeInfo]]:
    """The nodes created by the innermost expression at (line, col) of ``path``.

    Several nodes may share that expression (e.g. ``a, b = x.chunk(2)``); all are returned,
    from every module whose trace reached it.
    """
    return _innermost(((node.span, (module, node)) for module in [*report.modules, *report.graphs]
                       for node in module.nodes), path, line, col)


def calls_at(
    report: FileReport, path: str, line: int, col: int
) -> list[tuple[ModuleReport, CallInfo]]:
    """The calls of the innermost call expression at (line, col) of ``path`` that made no
    node of their own (a submodule traced through, a helper), one per instance that ran it.
    """
    return _innermost(((call.span, (module, call)) for module in report.modules
                       for call in module.calls), path, line, col)


def innermost_at(
    report: FileReport, path: str, line: int, col: int
) -> tuple[list[tuple[ModuleReport, NodeInfo]], list[tuple[ModuleReport, CallInfo]]]:
    """The nodes or the calls of the innermost expression at (line, col): a call that made
    no node of its own (``self.norm1(x)`` inside ``self.ls1(...)``) is more inner than the
    node of the call around it, which is not what the cursor is on."""
    nodes = nodes_at(report, path, line, col)
    calls = calls_at(report, path, line, col)
    if not nodes or not calls:
        return nodes, calls
    node_span, call_span = nodes[0][1].span, calls[0][1].span
    assert node_span is not None
    if _extent(call_span) < _extent(node_span):
        return [], calls
    return nodes, []


def export_nodes_at(
    report: FileReport, path: str, line: int, col: int
) -> list[tuple[ModuleReport, NodeInfo]]:
    """The nodes of the modules' exported programs that the innermost expression at
    (line, col) of ``path`` produced."""
    return _innermost(((node.span, (module, node)) for module in report.modules
                       if module.target_graphs is not None
                       and module.target_graphs.export is not None
                       for node in module.target_graphs.export.nodes), path, line, col)


def breaks_on_line(report: FileReport, path: str,
                   line: int) -> list[tuple[ModuleReport, int, BreakInfo]]:
    """The graph breaks dynamo made on ``line`` of ``path``: the module, the index of the
    subgraph the break ended, the break."""
    target = os.path.realpath(path)
    return [(module, index, graph.break_after) for module in report.modules
            if module.target_graphs is not None
            for index, graph in enumerate(module.target_graphs.compile)
            if graph.break_after is not None and graph.break_after.span is not None
            and graph.break_after.span.line <= line <= graph.break_after.span.end_line
            and os.path.realpath(graph.break_after.span.file) == target]


def module_at(report: FileReport, line: int, col: int) -> ModuleReport | None:
    """The module whose class name is at (line, col)."""
    for module in report.modules:
        if module.span is not None and _contains(module.span, line, col):
            return module
    return None


#: a node a pass created or changed: the pass, the run (graph) it was in, the node
PassNodeHit = tuple[PassReport, PassGraphRun, NodeInfo]


def pass_nodes_at(report: FileReport, path: str, line: int, col: int) -> list[PassNodeHit]:
    """The nodes that the innermost pass line at (line, col) of ``path`` created or changed,
    in every graph the pass ran on."""
    return _innermost(((node.span, (each, run, node)) for each in report.passes
                       for run in each.runs for node in run.nodes), path, line, col)


def pass_at(report: FileReport, line: int, col: int) -> PassReport | None:
    """The pass whose name (at its definition) is at (line, col)."""
    for each in report.passes:
        if each.span is not None and _contains(each.span, line, col):
            return each
    return None
