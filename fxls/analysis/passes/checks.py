"""The checks after a pass, each problem at the pass line that caused it.

``lint_graph`` is ``Graph.lint``'s contract (opcodes, ownership, topological order, unique
names, reachable targets) as diagnostics instead of the first exception, for torch.fx and
fxcore graphs alike; ``unused_nodes`` is FX010 for nodes a pass added that nothing uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.passes.edits import Edit, EditKind, EditLog
from fxls.report import Diagnostic, RelatedInfo

_LEGAL_OPS = {"placeholder", "get_attr", "call_function", "call_method", "call_module",
              "output"}


@dataclass(slots=True)
class Where:
    """How to place a problem: the graph's label and the fallback span."""

    graph_label: str
    fallback: SourceSpan
    is_reportable: Callable[[str], bool]
    pass_name: str


def locate(node: Any, log: EditLog, where: Where,
           kinds: tuple[EditKind, ...] | None = None) -> tuple[SourceSpan, Edit | None]:
    """The pass line that last created, rewired or moved ``node`` (else its model line),
    and that edit."""
    for edit in reversed(log.node_edits(node)):
        if kinds is None or edit.kind in kinds:
            return edit.span, edit
    source = getattr(node, "meta", {}).get("source")
    if isinstance(source, SourceSpan) and where.is_reportable(source.file):
        return source, None
    return where.fallback, None


def _related(node: Any, where: Where, span: SourceSpan) -> list[RelatedInfo]:
    """Where the node came from in the model, and the graph the problem is in."""
    related = []
    source = getattr(node, "meta", {}).get("source")
    if isinstance(source, SourceSpan) and source != span and where.is_reportable(source.file):
        related.append(RelatedInfo(to_span(source),
                                   f"`{node.name}` comes from here in `{where.graph_label}`"))
    return related


def _problem(code: str, message: str, node: Any, log: EditLog, where: Where,
             kinds: tuple[EditKind, ...] | None = None, **data: Any) -> Diagnostic:
    span, edit = locate(node, log, where, kinds)
    pass_name = where.pass_name or (edit.pass_name if edit is not None else "<module>")
    item = diagnostic(code, f"{message} (in the graph of `{where.graph_label}`)", span,
                      pass_name, graph=where.graph_label, node=node.name, **data)
    item.data["pass"] = pass_name
    item.related.extend(_related(node, where, span))
    return item


def lint_graph(graph: Any, log: EditLog, where: Where) -> list[Diagnostic]:
    """Every lint failure of ``graph`` (FX005/FX006), at the pass lines that caused them."""
    found: list[Diagnostic] = []
    seen: set[Any] = set()
    names: set[str] = set()
    nodes = list(graph.nodes)
    for node in nodes:
        if node.op not in _LEGAL_OPS:
            found.append(_problem("FX006", f"node `{node.name}` has the unknown opcode "
                                  f"`{node.op}`", node, log, where))
        for arg in node.all_input_nodes:
            if arg.graph is not graph:
                found.append(_problem(
                    "FX006", f"node `{node.name}` uses `{arg.name}`, a node of another graph "
                    "(copy nodes with node_copy and an arg_transform)", node, log, where,
                    input=arg.name))
            elif arg not in seen:
                found.append(_use_before_definition(node, arg, log, where))
        if node.name in names:
            found.append(_problem("FX006", f"the name `{node.name}` is defined twice", node,
                                  log, where))
        names.add(node.name)
        seen.add(node)
    found.extend(_missing_targets(graph, nodes, log, where))
    return found


def _use_before_definition(node: Any, arg: Any, log: EditLog, where: Where) -> Diagnostic:
    """FX005 where the order went wrong: the line that placed the using node (created or
    moved it) when its input was already there; else the line that moved the input after
    it, or the one that rewired the node to a later input."""
    placed = next((e for e in reversed(log.node_edits(node)) if e.kind in _PLACING), None)
    input_moved = next((e for e in reversed(log.node_edits(arg))
                        if e.kind is EditKind.MOVE), None)
    input_created = log.created_by_pass(arg)
    culprit, kinds = node, (EditKind.REWIRE,)
    if input_moved is not None and (placed is None or input_moved.seq > placed.seq):
        culprit, kinds = arg, (EditKind.MOVE,)
    elif placed is not None and (input_created is None or input_created.seq < placed.seq):
        kinds = _PLACING
    item = _problem("FX005", f"node `{node.name}` uses `{arg.name}` before it is defined: "
                    "the graph is not in topological order", culprit, log, where, kinds,
                    input=arg.name)
    if culprit is node and placed is not None and placed.placement is not None and (
            placed.placement[0] == "before"):
        item.data["inserting_before"] = placed.placement[1]
    return item


_PLACING = (EditKind.CREATE, EditKind.COPY, EditKind.MOVE)


def _missing_targets(graph: Any, nodes: list[Any], log: EditLog, where: Where) -> list[Diagnostic]:
    owner = graph.owning_module
    if owner is None:
        return []
    found = []
    for node in nodes:
        if node.op not in ("get_attr", "call_module") or not isinstance(node.target, str):
            continue
        current: Any = owner
        for atom in node.target.split("."):
            current = getattr(current, atom, None)
            if current is None:
                found.append(_problem(
                    "FX006", f"node `{node.name}` refers to `{node.target}`, which the owning "
                    "module does not have", node, log, where,
                    (EditKind.RETARGET, EditKind.CREATE, EditKind.COPY)))
                break
    return found


def unused_nodes(graph: Any, added: set[str], log: EditLog, where: Where) -> list[Diagnostic]:
    """FX010: nodes the pass created (not copied from the model) that nothing uses."""
    found = []
    for node in graph.nodes:
        if node.name not in added or node.users or node.op in ("placeholder", "output"):
            continue
        created = log.created_by_pass(node)
        if created is None or created.kind is not EditKind.CREATE or _is_impure(node):
            continue
        item = _problem("FX010", f"the pass adds `{node.name}` but nothing uses it", node, log,
                        where, (EditKind.CREATE,))
        item.data["dead_code"] = True
        found.append(item)
    return found


def _is_impure(node: Any) -> bool:
    try:
        return bool(node.is_impure())
    except Exception:
        return True
