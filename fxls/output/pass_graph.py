"""``fxls graph FILE::<pass>``: what an FX pass did to each graph it ran on.

``code`` is a unified diff of each graph's generated code before and after the pass (the
editor's before/after view, as text); ``table`` lists the graph after the pass with a mark
column (``+`` added, ``~`` rewired) and then its removed nodes (``-``); ``json`` gives the runs
with the code before and after; ``dot`` draws the graph after the pass with the added nodes
highlighted and the removed ones listed; ``html`` is the graph view's before/after page
(:mod:`fxls.output.pass_page`). The graph after the pass is rebuilt by
:mod:`fxls.output.pass_nodes`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fxls.graph_view.module_graph import (
    TABLE_HEADER,
    format_table,
    node_cells,
)
from fxls.graph_view.pass_view import (
    change_counts,
    changed,
    graph_label,
    pass_text,
    run_diff,
    run_summary,
)
from fxls.output.pass_nodes import (
    ADDED,
    EXPORT_SUFFIX,
    REMOVED,
    REWIRED,
    MarkedNode,
    after_graph,
    graph_before,
    removed_nodes,
)
from fxls.output.pass_page import render_pass_page
from fxls.report import (
    Diagnostic,
    FileReport,
    ModuleReport,
    PassGraphRun,
    PassReport,
    TraceStatus,
)

_DOT_MARK = {
    ADDED: 'style="filled,bold", fillcolor="#c8f7c5", color="#1a7f37"',
    REWIRED: 'style="filled", fillcolor="#fff8c5", color="#9a6700"',
    REMOVED: 'style="dashed", color="#cf222e", fontcolor="#cf222e"',
}


def graphs_of(report: FileReport) -> dict[str, ModuleReport]:
    """The graphs passes ran on, by label: the file's traced classes and module-level
    graphs, and the programs the export tier made of its classes (``Net (export)``: rows
    with their submodules and the file's expressions)."""
    found = {m.name: m for m in [*report.graphs, *report.modules] if m.nodes}
    for module in report.modules:
        exported = module.target_graphs.export if module.target_graphs is not None else None
        if exported is not None and exported.nodes and not exported.drafted:
            label = f"{module.name}{EXPORT_SUFFIX}"
            found[label] = ModuleReport(label, TraceStatus.TRACED, len(exported.nodes),
                                        module.span, exported.nodes, exported.code,
                                        module_types=dict(exported.module_types))
    return found


def _runs(report: PassReport, graphs: dict[str, ModuleReport]
          ) -> list[tuple[PassGraphRun, list[MarkedNode]]]:
    """Each run with its after graph followed by its removed nodes."""
    out = []
    for run in report.runs:
        before = graph_before(run, graphs)
        out.append((run, after_graph(run, before) + removed_nodes(run, before)))
    return out


def _title(report: PassReport, run: PassGraphRun) -> str:
    """``Net after `fuse`: +1 -2, 1 rewired`` (``no change``)."""
    counts = change_counts(run) if changed(run) else "no change"
    return f"{graph_label(run)} after `{report.name}`: {counts}"


def render_pass_table(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    if not report.runs:
        return f"# {report.name}: not run: no graph to run it on\n"
    parts = []
    for run, nodes in _runs(report, graphs):
        head = [f"# {_title(report, run)}"]
        if run.problem is not None:
            head.append(f"# problem: {run.problem}")
        if run.after is None:
            head.append("# no graph after the pass: the graph before it")
        rows = [(m.mark, *_with_swap(node_cells(m.node, m.lines), m.swap)) for m in nodes]
        parts.append("\n".join(head) + "\n" + format_table(("", *TABLE_HEADER), rows))
    return "\n".join(parts)


def _with_swap(cells: tuple[str, ...], swap: str | None) -> tuple[str, ...]:
    """A module call's target with the swap, if the pass swapped its module:
    ``blocks.0.conv (Conv2d+BatchNorm2d → Conv2d)``."""
    if swap is None:
        return cells
    name, op, target, *rest = cells
    return (name, op, f"{target} ({swap})", *rest)


def render_pass_json(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    runs: list[dict[str, Any]] = []
    for run, nodes in _runs(report, graphs):
        runs.append({
            "graph": run.graph, "summary": run_summary(run), "added": list(run.added),
            "removed": list(run.removed), "rewired": list(run.rewired), "problem": run.problem,
            "before": _code(run.before), "after": _code(run.after), "diff": run_diff(run),
            "nodes": [{**m.node.to_dict(), "mark": m.mark, "inputs": m.inputs,
                       **({"swap": m.swap} if m.swap is not None else {})}
                      for m in nodes],
            "changed": [n.to_dict() for n in run.nodes],
            "swapped": dict(run.swapped),
        })
    document = {"name": report.name, "kind": report.kind, "graphs_from": report.graphs_from,
                "span": report.span.to_dict() if report.span is not None else None,
                "status": "problem" if report.has_problem else "ok", "runs": runs}
    return json.dumps(document, indent=2) + "\n"


def _code(code: str | None) -> str | None:
    return code.strip("\n").rstrip() if code is not None else None


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_pass_dot(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    """One cluster per graph the pass ran on: the graph after it, added nodes filled green,
    rewired ones yellow, removed ones dashed red without edges."""
    lines = [f'digraph "{_dot_escape(report.name)}" {{', "  rankdir=TB;",
             '  node [fontname="monospace", fontsize=10, shape=box];']
    for index, (run, nodes) in enumerate(_runs(report, graphs)):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f'    label="{_dot_escape(_title(report, run))}";')
        ids = {m.node.name: f"{index}:{m.node.name}" for m in nodes if m.mark != REMOVED}
        for m in nodes:
            ident = f"{index}:{m.node.name}" + ("(removed)" if m.mark == REMOVED else "")
            label = f"{m.mark} {m.node.name}".strip() + f"\\n{m.node.op}: {m.node.target}"
            style = _DOT_MARK.get(m.mark, "")
            lines.append(f'    "{_dot_escape(ident)}" [label="{_dot_escape(label)}"'
                         + (f", {style}" if style else "") + "];")
        for m in nodes:
            for name in m.inputs:
                if name in ids:
                    lines.append(f'    "{_dot_escape(ids[name])}" -> '
                                 f'"{_dot_escape(ids[m.node.name])}";')
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_pass_html(report: PassReport, graphs: dict[str, ModuleReport],
                     diagnostics: Sequence[Diagnostic] = ()) -> str:
    """The graph view's before/after page: per graph, the graph before and after the pass
    side by side, grouped by module, the changes and the pass's problems marked."""
    return render_pass_page(report, graphs, diagnostics)


def render_pass_code(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    return pass_text(report)


PASS_RENDERERS = {"code": render_pass_code, "table": render_pass_table,
                  "dot": render_pass_dot, "json": render_pass_json, "html": render_pass_html}


def render_pass(report: PassReport, fmt: str, graphs: dict[str, ModuleReport],
                diagnostics: Sequence[Diagnostic] = ()) -> str:
    """``report``'s before/after view; ``graphs`` are the graphs it ran on, before it;
    ``diagnostics`` the file's (the page marks the pass's own on its nodes)."""
    if fmt == "html":
        return render_pass_html(report, graphs, diagnostics)
    return PASS_RENDERERS[fmt](report, graphs)
