"""The checks after a pass, each problem at the pass line that caused it.

``lint_graph`` is ``Graph.lint``'s contract (opcodes, ownership, topological order, unique
names, reachable targets) as diagnostics instead of the first exception, for torch.fx and
fxcore graphs alike, and one thing ``lint`` lets through: a second ``output`` node (the
generated code returns at the first). A graph a ``gm.graph = new_graph`` replaced (a final
``legalize_graph``) is not the pass's result and is not checked. ``unused_nodes`` is FX010
for nodes a pass left that nothing uses: nodes it added, and nodes it stopped using.
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


#: the label of a model's torch.export graph ends so (``Net (export)``)
EXPORT_SUFFIX = " (export)"


def in_graph(label: str, preposition: str = "in") -> str:
    """``in the graph of `Net``` for a named graph; ``in a graph built at import``; ``in
    the export graph of `Net``` for its torch.export graph."""
    if label.startswith("a graph "):
        return f"{preposition} {label}"
    if label.endswith(EXPORT_SUFFIX):
        return f"{preposition} the export graph of `{label.removesuffix(EXPORT_SUFFIX)}`"
    return f"{preposition} the graph of `{label}`"


def _problem(code: str, message: str, node: Any, log: EditLog, where: Where,
             kinds: tuple[EditKind, ...] | None = None, at: Edit | SourceSpan | None = None,
             **data: Any) -> Diagnostic:
    """A problem of ``node`` at the pass line that last made it (of ``kinds``), or ``at``
    an edit or a span given."""
    if at is None:
        span, edit = locate(node, log, where, kinds)
    else:
        span, edit = (at.span, at) if isinstance(at, Edit) else (at, None)
    pass_name = where.pass_name or (edit.pass_name if edit is not None else "<module>")
    item = diagnostic(code, f"{message} ({in_graph(where.graph_label)})", span,
                      pass_name, graph=where.graph_label, node=node.name, **data)
    item.data["pass"] = pass_name
    item.related.extend(_related(node, where, span))
    return item


def lint_graph(graph: Any, log: EditLog, where: Where) -> list[Diagnostic]:
    """Every lint failure of ``graph`` (FX005/FX006), at the pass lines that caused them."""
    if log.is_superseded(graph):
        return []
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
    found.extend(_second_outputs(nodes, log, where))
    return found


def _second_outputs(nodes: list[Any], log: EditLog, where: Where) -> list[Diagnostic]:
    """FX006 for each ``output`` node after the first: the generated code returns at the
    first, so what the later ones return is never computed for the caller."""
    outputs = [node for node in nodes if node.op == "output"]
    return [_problem("FX006", f"the graph has a second `output` node, `{node.name}`, after "
                     f"`{outputs[0].name}`: the generated code returns at the first, so "
                     f"`{node.name}` is never returned (rewire the first output instead)",
                     node, log, where, _PLACING) for node in outputs[1:]]


def _use_before_definition(node: Any, arg: Any, log: EditLog, where: Where) -> Diagnostic:
    """FX005 where the order went wrong: the line that placed the using node (created or
    moved it) when its input was already there; else the line that moved the input after
    it, or the one that rewired the node to a later input (or to itself: a
    ``replace_all_uses_with`` of a node that the replacement uses)."""
    if arg is node:
        return _problem("FX005", f"node `{node.name}` uses itself: the graph has a cycle",
                        node, log, where, (EditKind.REWIRE,), input=arg.name)
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


def unused_nodes(graph: Any, added: set[str], log: EditLog, where: Where,
                 used_before: set[str] | None = None) -> list[Diagnostic]:
    """FX010 for each node nothing uses that the pass is answerable for: one it stopped
    using (at the line that took its last use away), one it created (not copied from the
    model) and never used, and one of the graph the pass found that was used before it
    (``used_before``: the names of the nodes that had users) when no line of the pass took
    its use away (a Transformer's result: at the pass)."""
    if log.is_superseded(graph):
        return []
    found = []
    for node in graph.nodes:
        if node.users or node.op in ("placeholder", "output") or _is_impure(node):
            continue
        item = _unused(node, added, log, where, used_before or set())
        if item is not None:
            item.data["dead_code"] = True
            found.append(item)
    return found


def _unused(node: Any, added: set[str], log: EditLog, where: Where, used_before: set[str]
            ) -> Diagnostic | None:
    cut = log.last_cut(node)
    created = log.created_by_pass(node)
    if any(e is not None and log.in_crashed_pass(e) for e in (cut, created)):
        return None  # a pass that raised half-way: its unused nodes are not its result
    if node.op == "get_attr" and (created is None or created.kind is not EditKind.CREATE):
        return None  # a fetch left behind computes nothing (torch's merge_matmul leaves one)
    if cut is not None:
        if cut.node in getattr(cut.node, "all_input_nodes", ()):
            return None  # the cut wired a node to itself: FX005 says so, at the same line
        return _problem("FX010", f"`{node.name}` is no longer used after this line, but the "
                        "graph still computes it: erase it, or call "
                        "`graph.eliminate_dead_code()`", node, log, where, at=cut,
                        kept=True)
    if created is not None and created.kind is EditKind.CREATE and node.name in added:
        return _problem("FX010", f"the pass adds `{node.name}` but nothing uses it", node,
                        log, where, (EditKind.CREATE,))
    if node.name in used_before and node.name not in added:  # a Transformer's result
        return _problem("FX010", f"the pass leaves `{node.name}` computed but unused",
                        node, log, where, at=where.fallback, kept=True)
    return None


def _is_impure(node: Any) -> bool:
    try:
        return bool(node.is_impure())
    except Exception:
        return True
