"""An FX pass's before/after as the graph view draws it: per graph the pass ran on, the graph
before and the graph after, as two graph documents
(:func:`fxls.graph_view.module_graph.graph_document`) whose nodes carry a ``mark``
(``added``, ``removed``, ``rewired``), with the pass's diagnostics located at the nodes they
concern.

``fxls graph FILE::<pass> --format html`` writes it as one self-contained page, the VS Code
extension draws the same document in its webview (``fxls.showGraph`` with the format ``pass``
answers it as ``document``): two panes side by side, grouped by module, the changes marked,
a click on a node goes to the pass line that made or changed it (else its model line).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fxls.graph_view.module_graph import graph_page, module_groups, spans_overlap
from fxls.graph_view.pass_view import graph_label, lens_title, run_diff, run_summary
from fxls.output.pass_nodes import (
    ADDED,
    REMOVED,
    REWIRED,
    after_graph,
    code_nodes,
    graph_before,
    guessed_node,
    names_in,
)
from fxls.output.pass_swaps import ModuleSwap, module_swaps
from fxls.report import Diagnostic, ModuleReport, NodeInfo, PassGraphRun, PassReport, TraceStatus

#: a call of a module the pass swapped (and did nothing else to)
SWAPPED = "swapped"
#: ``mark`` of a node in the page's documents
MARKS = {ADDED: "added", REWIRED: "rewired", REMOVED: "removed", SWAPPED: "swapped"}


def pass_diagnostics(report: PassReport, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics found in ``report``'s pass (FX004-FX007, FX010, FX017 at its lines)."""
    return [d for d in diagnostics
            if d.data.get("pass") == report.name or d.module == report.name]


def _before_nodes(run: PassGraphRun, before: ModuleReport | None) -> list[NodeInfo]:
    """The graph before the pass: the traced model's, else guessed from its code (a pass
    run on representative graphs or the project's pass_models)."""
    if before is not None and before.nodes:
        return list(before.nodes)
    order = code_nodes(run.before or "") or []
    names = {name for name, _ in order}
    nodes = [guessed_node(name, expression, names) for name, expression in order]
    users: dict[str, list[str]] = {n.name: [] for n in nodes}
    for (name, expression), node in zip(order, nodes, strict=True):
        for used in names_in(expression, names - {name}):
            users[used].append(node.name)
    return [replace(n, users=users[n.name]) for n in nodes]


def _node_entry(node: NodeInfo, mark: str | None, origin: NodeInfo | None,
                swap: str | None) -> dict[str, Any]:
    entry = node.to_dict()
    for unused in ("named_args", "backward", "module_params"):
        entry.pop(unused, None)
    entry["mark"] = mark
    if swap is not None:
        entry["swap"] = swap
    # the model line a node the pass changed came from (its span is the pass line)
    if origin is not None and origin.span is not None and origin.span != node.span:
        entry["origin"] = origin.span.to_dict()
    return entry


def _problem_entry(diagnostic: Diagnostic, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
    named = diagnostic.data.get("node")
    names = {n.name for n in nodes}
    if isinstance(named, str) and named in names:
        at = [named]
    else:
        at = [n.name for n in nodes
              if n.span is not None and spans_overlap(n.span, diagnostic.span)]
    return {"code": diagnostic.code, "severity": str(diagnostic.severity),
            "message": diagnostic.message, "span": diagnostic.span.to_dict(), "nodes": at}


def _document(name: str, status: str, nodes: list[NodeInfo], marks: dict[str, str],
              origins: dict[str, NodeInfo], swaps: dict[str, ModuleSwap],
              before: ModuleReport | None, code: str | None,
              problems: list[dict[str, Any]]) -> dict[str, Any]:
    module_types = dict(before.module_types) if before is not None else {}
    module = ModuleReport(name, TraceStatus.TRACED, len(nodes), nodes=nodes,
                          module_types=module_types)
    swapped = {n.name: swaps[n.target] for n in nodes
               if n.op == "call_module" and n.target in swaps}
    return {
        "version": 1,
        "name": name,
        "status": status,
        "file": before.span.file if before is not None and before.span is not None else None,
        "nodes": [_node_entry(n, marks.get(n.name, MARKS[SWAPPED] if n.name in swapped
                                          else None), origins.get(n.name),
                              swapped[n.name].text if n.name in swapped else None)
                  for n in nodes],
        "groups": module_groups(module),
        "problems": problems,
        "code": code,
    }


def _is_about(diagnostic: Diagnostic, run: PassGraphRun, only: bool) -> bool:
    graph = diagnostic.data.get("graph")
    if isinstance(graph, str):
        return graph in (run.graph, graph_label(run))
    return only


def run_documents(run: PassGraphRun, before: ModuleReport | None,
                  diagnostics: Sequence[Diagnostic], only: bool = True) -> dict[str, Any]:
    """One run of a pass: its summary, code diff, and the graphs before and after it."""
    label = graph_label(run)
    before_nodes = _before_nodes(run, before)
    known = {n.name: n for n in before_nodes}
    removed, rewired, added = set(run.removed), set(run.rewired), set(run.added)
    about = [d for d in diagnostics if _is_about(d, run, only)]
    after_doc: dict[str, Any] | None = None
    after_nodes: list[NodeInfo] = []
    marks: dict[str, str] = {}
    origins: dict[str, NodeInfo] = {}
    swaps = module_swaps(run, before_nodes)
    if run.after is not None:
        marked = after_graph(run, before if before is not None and before.nodes else
                             ModuleReport(label, TraceStatus.TRACED, nodes=before_nodes))
        after_nodes = [m.node for m in marked]
        marks = {n.name: MARKS[ADDED] if n.name in added else MARKS[REWIRED]
                 for n in after_nodes if n.name in added or n.name in rewired}
        origins = {name: known[name] for name in rewired if name in known}
    # a problem goes on the graph after the pass when its node is there, else before it
    after_problems: list[dict[str, Any]] = []
    before_problems: list[dict[str, Any]] = []
    for diagnostic in about:
        entry = _problem_entry(diagnostic, after_nodes)
        if run.after is not None and (entry["nodes"] or not _problem_entry(
                diagnostic, before_nodes)["nodes"]):
            after_problems.append(entry)
        else:
            before_problems.append(_problem_entry(diagnostic, before_nodes))
    if run.after is not None:
        after_doc = _document(f"{label}, after", "traced", after_nodes, marks, origins,
                              swaps, before, _code_text(run.after), after_problems)
    before_marks = {name: MARKS[REMOVED] for name in removed}
    before_marks.update({name: MARKS[REWIRED] for name in rewired if name in known})
    before_doc = _document(f"{label}, before", str(before.status) if before else "traced",
                           before_nodes, before_marks, {}, swaps, before, _code_text(run.before),
                           before_problems)
    return {
        "graph": label,
        "summary": run_summary(run),
        "problem": run.problem,
        "added": list(run.added),
        "removed": list(run.removed),
        "rewired": list(run.rewired),
        "diff": run_diff(run),
        "before": before_doc,
        "after": after_doc,
    }


def _code_text(code: str | None) -> str | None:
    return code.strip("\n").rstrip() if code is not None else None


def pass_document(report: PassReport, graphs: dict[str, ModuleReport],
                  diagnostics: Sequence[Diagnostic] = ()) -> dict[str, Any]:
    """The before/after page's data: ``kind: "pass"`` and a run per graph the pass ran on
    (``before`` and ``after``: graph documents with marked nodes; ``after`` is null when the
    pass raised). ``diagnostics`` are the file's: those of this pass go on its nodes."""
    found = pass_diagnostics(report, diagnostics)
    only = len(report.runs) == 1
    runs = [run_documents(run, graph_before(run, graphs), found, only)
            for run in report.runs]
    placed = {id(d) for d in found for run in report.runs if _is_about(d, run, only)}
    return {
        "version": 1,
        "kind": "pass",
        "name": report.name,
        "passKind": report.kind,
        "graphsFrom": report.graphs_from,
        "status": "problem" if report.has_problem else "ok",
        "title": lens_title(report),
        "file": report.span.file if report.span is not None else None,
        "span": report.span.to_dict() if report.span is not None else None,
        "runs": runs,
        # the pass's problems on no graph it ran on (an exception at import, ...)
        "problems": [_problem_entry(d, []) for d in found if id(d) not in placed],
    }


def render_pass_page(report: PassReport, graphs: dict[str, ModuleReport],
                     diagnostics: Sequence[Diagnostic] = ()) -> str:
    """The self-contained before/after page (the graph view's script inline)."""
    document = pass_document(report, graphs, diagnostics)
    if document["file"]:
        document["file"] = os.path.abspath(document["file"])
    return graph_page(document)
