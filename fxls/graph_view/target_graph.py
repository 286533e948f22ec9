"""The graphs torch's own tiers made of a module, drawn as its FX graph is
(``fxls graph FILE::Class --target export|compile``): export's ATen program grouped by
``nn_module_stack`` with the module's export failures on the nodes of their line; dynamo's
subgraphs side by side in one document, each a group, the break that ended one drawn as an
edge into the next and marked on it.
"""

from __future__ import annotations

import json
from typing import Any

from fxls.codes import target_of
from fxls.graph_view.module_graph import (
    RENDERERS,
    graph_document,
    graph_page,
    module_problems,
)
from fxls.report import FileReport, ModuleReport, NodeInfo, TargetGraph

#: what the page's title calls each target's graph
TITLES = {"export": "exported program (ATen)", "compile": "dynamo's subgraphs"}


def target_view(module: ModuleReport, target: str) -> ModuleReport | None:
    """``module`` with the graph the target made in place of its FX graph; None when the
    target made none (not run, or failed before a program)."""
    graphs = module.target_graphs
    if graphs is None:
        return None
    if target == "export":
        return _view(module, graphs.export) if graphs.export is not None else None
    return _view(module, _joined(graphs.compile)) if graphs.compile else None


def _view(module: ModuleReport, graph: TargetGraph) -> ModuleReport:
    return ModuleReport(module.name, module.status, len(graph.nodes), module.span,
                        graph.nodes, graph.code, module_types=dict(graph.module_types),
                        class_places=dict(module.class_places), targets=dict(module.targets))


def _joined(subgraphs: list[TargetGraph]) -> TargetGraph:
    """Dynamo's subgraphs as one graph: subgraph ``i`` is the group ``subgraph_i``, its
    nodes named ``name@i``; each break is an edge from the output of the subgraph it ended
    to the first node of the next, that output at the break's line."""
    nodes: list[NodeInfo] = []
    code = []
    for number, graph in enumerate(subgraphs, 1):
        group = f"subgraph_{number}"
        own = [_renamed(node, number, group) for node in graph.nodes]
        if graph.break_after is not None and own:
            own[-1].span = graph.break_after.span  # a click on its end leads to the break
            following = subgraphs[number].nodes if number < len(subgraphs) else []
            if following:
                own[-1].users.append(f"{following[0].name}@{number + 1}")
        nodes.extend(own)
        code.append(f"# subgraph {number} of {len(subgraphs)}\n{graph.code or ''}")
    types = {f"subgraph_{number}": f"dynamo subgraph {number} of {len(subgraphs)}"
             for number in range(1, len(subgraphs) + 1)}
    for number, graph in enumerate(subgraphs, 1):
        types.update({f"subgraph_{number}.{path}": cls
                      for path, cls in graph.module_types.items()})
    return TargetGraph(nodes, "\n".join(code), types)


def _renamed(node: NodeInfo, number: int, group: str) -> NodeInfo:
    path = f"{group}.{node.module_path}" if node.module_path else group
    return NodeInfo(f"{node.name}@{number}", node.op, node.target, node.args, node.kwargs,
                    [f"{user}@{number}" for user in node.users], node.span, node.shape,
                    node.dtype, path, node.module_type if node.module_path else
                    f"dynamo subgraph {number}")


def target_document(module: ModuleReport, report: FileReport | None,
                    target: str) -> dict[str, Any] | None:
    """The graph document (``graph_document``'s shape) of the graph ``target`` made of
    ``module``, with that target's problems of the module on the nodes of their expression
    (and, for compile, each break on the output of the subgraph it ended)."""
    view = target_view(module, target)
    if view is None:
        return None
    document = graph_document(view, problems=_target_problems(module, view, report, target))
    drafted = target == "export" and module.target_graphs is not None and \
        module.target_graphs.export is not None and module.target_graphs.export.drafted
    # the graph torch made is whole (its problems are marked), draft_export's where export
    # failed: the page says which
    document["status"] = "drafted" if drafted else "traced"
    document["target"] = target
    document["title"] = TITLES[target]
    return document


def _target_problems(module: ModuleReport, view: ModuleReport, report: FileReport | None,
                     target: str) -> list[dict[str, Any]]:
    """The module's problems of ``target`` (and those of no target) where they land on the
    target's graph; for compile, each break on the output of the subgraph it ended."""
    problems = []
    if report is not None:
        mine = FileReport(report.path, diagnostics=[
            item for item in report.diagnostics
            if (target_of(item.code) is None or str(target_of(item.code)) == target)
            and item.code != "FX301"])  # a break is drawn where its subgraph ends
        problems = module_problems(view, mine)
    if target == "compile" and module.target_graphs is not None:
        problems += _breaks(module.target_graphs.compile)
    return problems


def _breaks(subgraphs: list[TargetGraph]) -> list[dict[str, Any]]:
    found = []
    for number, graph in enumerate(subgraphs, 1):
        if graph.break_after is None or not graph.nodes:
            continue
        found.append({
            "code": "FX301", "severity": "warning",
            "message": f"graph break: subgraph {number} of {len(subgraphs)} ends here, dynamo "
                       f"resumes in subgraph {number + 1}: {graph.break_after.reason}",
            "span": graph.break_after.span.to_dict() if graph.break_after.span else None,
            "nodes": [f"{graph.nodes[-1].name}@{number}"], "group": None, "attached": "own"})
    return found


def render_target(module: ModuleReport, fmt: str, report: FileReport | None,
                  target: str) -> str | None:
    """The target's graph of ``module`` in format ``fmt``; None when it made none."""
    if fmt in ("json", "html"):
        document = target_document(module, report, target)
        if document is None:
            return None
        if fmt == "html":
            return graph_page(document)
        return json.dumps(document, indent=2) + "\n"
    view = target_view(module, target)
    return RENDERERS[fmt](view, None) if view is not None else None
