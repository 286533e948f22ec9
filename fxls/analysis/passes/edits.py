"""Which line of a pass created, rewired, moved, retargeted or erased each graph node.

Passes are written against ``torch.fx`` (or fxcore) and must run unchanged, so the log
instruments the graph classes themselves while it is active: every mutation method of
``Graph``/``Node``/``GraphModule`` of both implementations is wrapped to note the event and
the innermost frame of the user's own files that caused it (the pass's line). Nodes made by a
tracer (``symbolic_trace`` inside a module-to-module pass) are the model's, not the pass's:
the tracer's ``trace`` is wrapped too and edits under it are not pass edits.

Beyond the edits themselves the log keeps what the checks of a pass's result need: which edit
took away each node's last use (a dead node is reported there), which node each copy was
made from (``legalize_graph`` copies the whole graph: the copy's problems are at the lines
that edited the original), and which graphs a ``gm.graph = new_graph`` replaced (they are
no longer the pass's result and are not checked).
"""

from __future__ import annotations

import ast
import linecache
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fxcore.source import SourceSpan, span_of_frame

_MAX_DEPTH = 80


class EditKind(StrEnum):
    CREATE = "create"
    COPY = "copy"  # node_copy / graph_copy: a node carried over from another graph
    REWIRE = "rewire"
    MOVE = "move"
    RETARGET = "retarget"
    ERASE = "erase"


@dataclass(slots=True)
class Edit:
    kind: EditKind
    node: Any
    graph: Any
    span: SourceSpan
    #: the file's function that made the edit (``negate_after_relu``), or ``<module>``
    pass_name: str
    seq: int
    #: for a creation: ("before" | "after", the anchor node's name) under
    #: ``inserting_before/after(anchor)``, else None
    placement: tuple[str, str] | None = None
    #: the nodes this edit stopped using (a rewire's old inputs, an erased node's inputs)
    dropped: tuple[Any, ...] = ()
    #: the code of ``pass_name`` (None at module level)
    code: types.CodeType | None = None


@dataclass(slots=True)
class GraphState:
    """Per graph: its edits, and the first one since its module's last recompile."""

    edits: list[Edit] = field(default_factory=list)
    first_stale: Edit | None = None


@dataclass(slots=True)
class Lineage:
    """Where a pass's result came from, beyond its edits."""

    #: node -> the last edit that took a use of it away
    cuts: dict[Any, Edit] = field(default_factory=dict)
    #: a copy (node_copy) -> the node it was made from, when that one had edits
    origins: dict[Any, Any] = field(default_factory=dict)
    #: ids of graphs a GraphModule's ``graph = new_graph`` replaced
    superseded: set[int] = field(default_factory=set)
    #: ids of the codes of pass functions that raised while the file was imported
    crashed: set[int] = field(default_factory=set)


@dataclass(slots=True)
class StaleCall:
    span: SourceSpan
    first_change: Edit
    pass_name: str


class EditLog:
    """The edits of passes, per node and per graph, while ``active()``."""

    def __init__(self, is_pass_file: Callable[[str], bool],
                 texts: dict[str, str] | None = None) -> None:
        self.is_pass_file = is_pass_file
        #: the text analysed for a file (an editor's unsaved buffer) where it is not on disk
        self.texts = dict(texts or {})
        self._assignment_maps: dict[str, dict[tuple[int, int, int, int], SourceSpan]] = {}
        self.edits: list[Edit] = []
        self.by_node: dict[Any, list[Edit]] = {}
        self.graphs: dict[int, GraphState] = {}
        self._graph_refs: dict[int, Any] = {}  # keeps ids stable while the log lives
        self._tracing = 0
        #: how many traces have started (a module-to-module pass traces first)
        self.traces = 0
        self._building = 0  # inside create_node / node_copy: the parts are one creation
        self._paused = 0
        self._copying = 0
        #: GraphModules called while stale: the call's span and the first stale edit
        self.stale_calls: list[StaleCall] = []
        self.lineage = Lineage()

    # -- queries -----------------------------------------------------------------------
    def node_edits(self, node: Any) -> list[Edit]:
        """The edits of ``node``, after those of the node it was copied from (if any)."""
        own = self.by_node.get(node, [])
        origin = self.lineage.origins.get(node)
        return own if origin is None else [*self.node_edits(origin), *own]

    def last_cut(self, node: Any) -> Edit | None:
        """The last edit that took a use of ``node`` (or of the node it was copied from)
        away."""
        while node is not None:
            cut = self.lineage.cuts.get(node)
            if cut is not None:
                return cut
            node = self.lineage.origins.get(node)
        return None

    def is_superseded(self, graph: Any) -> bool:
        return id(graph) in self.lineage.superseded

    def crashed(self, spans: list[SourceSpan]) -> None:
        """The file raised at these lines while it was imported: a pass function that
        raised there stopped half-way, and what it left unused is not its result."""
        codes = {id(e.code): e.code for e in self.edits if e.code is not None}
        for code in codes.values():
            lines = {line for _, _, line in code.co_lines() if line is not None}
            if any(s.file == code.co_filename and s.line in lines for s in spans):
                self.lineage.crashed.add(id(code))

    def in_crashed_pass(self, edit: Edit) -> bool:
        return edit.code is not None and id(edit.code) in self.lineage.crashed

    def created_by_pass(self, node: Any) -> Edit | None:
        edits = self.node_edits(node)
        if edits and edits[0].kind in (EditKind.CREATE, EditKind.COPY):
            return edits[0]
        return None

    def last_edit(self, node: Any) -> Edit | None:
        edits = self.by_node.get(node)
        return edits[-1] if edits else None

    def graph_state(self, graph: Any) -> GraphState | None:
        return self.graphs.get(id(graph))

    def mark(self) -> int:
        return len(self.edits)

    def since(self, mark: int) -> list[Edit]:
        return self.edits[mark:]

    @contextmanager
    def paused(self) -> Iterator[None]:
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    # -- recording ---------------------------------------------------------------------
    def _where(self) -> tuple[SourceSpan, str, types.CodeType | None] | None:
        """The innermost frame of a pass file on the stack, and its outermost function
        (name and code)."""
        frame: types.FrameType | None = sys._getframe(2)
        span: SourceSpan | None = None
        owner, owner_code = "<module>", None
        depth = 0
        while frame is not None and depth < _MAX_DEPTH:
            code = frame.f_code
            if span is None and _in_torch_tracer(code.co_filename):
                return None  # torch.export / make_fx building its graph: no pass's edit
            if self.is_pass_file(code.co_filename):
                if span is None:
                    span = span_of_frame(frame)
                if code.co_name != "<module>":
                    owner, owner_code = code.co_qualname, code
            frame = frame.f_back
            depth += 1
        return None if span is None else (span, owner, owner_code)

    def _record(self, kind: EditKind, node: Any, graph: Any,
                placement: tuple[str, str] | None = None, dropped: tuple[Any, ...] = ()
                ) -> None:
        if self._paused or self._tracing:
            return
        where = self._where()
        if where is None:
            return
        span, owner, code = where
        span = self._assignments(span.file).get(_key(span), span)
        edit = Edit(kind, node, graph, span, owner, len(self.edits), placement, dropped, code)
        self.edits.append(edit)
        self.by_node.setdefault(node, []).append(edit)
        for each in dropped:
            self.lineage.cuts[each] = edit
        key = id(graph)
        self._graph_refs[key] = graph
        state = self.graphs.setdefault(key, GraphState())
        state.edits.append(edit)
        if state.first_stale is None:
            state.first_stale = edit

    def _assignments(self, filename: str) -> dict[tuple[int, int, int, int], SourceSpan]:
        found = self._assignment_maps.get(filename)
        if found is None:
            text = self.texts.get(filename)
            if text is None:
                text = "".join(linecache.getlines(filename))
            found = self._assignment_maps[filename] = _assignments(filename, text)
        return found

    def _copied(self, copy: Any, original: Any) -> None:
        lineage = self.lineage
        if original in self.by_node or original in lineage.cuts or original in lineage.origins:
            lineage.origins[copy] = original

    def _replaced(self, old: Any, new: Any) -> None:
        if old is not None and old is not new and not (self._paused or self._tracing):
            self.lineage.superseded.add(id(old))
            self._graph_refs[id(old)] = old

    def _recompiled(self, graph: Any) -> None:
        state = self.graphs.get(id(graph))
        if state is not None:
            state.first_stale = None

    def stale_edit(self, graph_module: Any) -> Edit | None:
        """The first edit of ``graph_module``'s graph since its last recompile, if any."""
        state = self.graphs.get(id(getattr(graph_module, "graph", None)))
        return state.first_stale if state is not None else None

    # -- instrumentation ---------------------------------------------------------------
    @contextmanager
    def active(self) -> Iterator[EditLog]:
        patches = [*_torch_fx_patches(self), *_fxcore_patches(self)]
        saved = []
        for owner, name, make in patches:
            original = owner.__dict__.get(name)
            inherited = getattr(owner, name)
            saved.append((owner, name, original))
            setattr(owner, name, make(inherited))
        try:
            yield self
        finally:
            for owner, name, original in reversed(saved):
                if original is None:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)


#: torch's tracers that build graphs of their own (export, make_fx, dynamo, AOT) and the
#: unlifting of ``ep.module()``: a node they make is theirs even when a user frame (the
#: model's ``forward``, the module-level export call) is above them on the stack
_TORCH_TRACERS = ("/torch/export/", "/torch/_export/", "/torch/_dynamo/", "/torch/_functorch/",
                  "/torch/fx/experimental/proxy_tensor.py")


def _in_torch_tracer(filename: str) -> bool:
    return any(part in filename.replace("\\", "/") for part in _TORCH_TRACERS)


def _key(span: SourceSpan) -> tuple[int, int, int, int]:
    return (span.line, span.col, span.end_line, span.end_col)


def _assignments(filename: str, text: str) -> dict[tuple[int, int, int, int], SourceSpan]:
    """Attribute targets of assignments -> the whole statement: Python's position of a
    ``node.args = (...)`` store covers only ``node.args``; the editor shows the statement."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            whole = SourceSpan(filename, node.lineno, node.end_lineno or node.lineno,
                               node.col_offset, node.end_col_offset or node.col_offset)
            for target in targets:
                if isinstance(target, ast.Attribute):
                    found[(target.lineno, target.col_offset, target.end_lineno or 0,
                           target.end_col_offset or 0)] = whole
    return found


_Patch = tuple[type, str, Callable[[Any], Any]]


def _creating(log: EditLog, kind: EditKind) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def create_node(graph: Any, *args: Any, **kwargs: Any) -> Any:
            placement = _placement(graph) if not log._building else None
            log._building += 1
            try:
                node = original(graph, *args, **kwargs)
            finally:
                log._building -= 1
            if not log._building:
                log._record(EditKind.COPY if log._copying else kind, node, graph, placement)
            return node

        return create_node

    return make


def _placement(graph: Any) -> tuple[str, str] | None:
    """Where ``graph`` inserts now: under ``inserting_before(n)`` its insert function is
    ``n.prepend``, under ``inserting_after(n)`` ``n.append`` (torch.fx and fxcore alike)."""
    insert = graph.__dict__.get("_insert")
    anchor = getattr(insert, "__self__", None)
    name = getattr(getattr(insert, "__func__", None), "__name__", "")
    if anchor is None or not hasattr(anchor, "op") or anchor.op == "root":
        return None
    if name in ("prepend", "_prepend"):
        return ("before", anchor.name)
    if name == "append":
        return ("after", anchor.name)
    return None


def _copying(log: EditLog) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def node_copy(graph: Any, node: Any, *args: Any, **kwargs: Any) -> Any:
            log._copying += 1
            try:
                copy = original(graph, node, *args, **kwargs)
            finally:
                log._copying -= 1
            log._copied(copy, node)
            return copy

        return node_copy

    return make


def _on_node(log: EditLog, kind: EditKind) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def edit(node: Any, *args: Any, **kwargs: Any) -> Any:
            if log._building:  # a node being made: no input of it is dropped
                return original(node, *args, **kwargs)
            before = _inputs(node)
            result = original(node, *args, **kwargs)
            after = _inputs(node)
            log._record(kind, node, node.graph,
                        dropped=tuple(n for n in before if n not in after and n is not node))
            return result

        return edit

    return make


def _inputs(node: Any) -> list[Any]:
    try:
        return node.all_input_nodes
    except AttributeError:  # a Node still in its __init__
        return []


def _moving(log: EditLog) -> Callable[[Any], Any]:
    """``anchor.prepend(x)`` moves ``x`` (an insertion of a new node is part of creating it)."""

    def make(original: Any) -> Any:
        def prepend(anchor: Any, moved: Any) -> Any:
            result = original(anchor, moved)
            if not log._building:
                log._record(EditKind.MOVE, moved, moved.graph)
            return result

        return prepend

    return make


def _erasing(log: EditLog) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def erase_node(graph: Any, node: Any) -> Any:
            inputs = tuple(_inputs(node))
            result = original(graph, node)
            log._record(EditKind.ERASE, node, graph, dropped=inputs)
            return result

        return erase_node

    return make


def _retargeting(log: EditLog) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def __setattr__(node: Any, name: str, value: Any) -> None:
            original(node, name, value)
            if name in ("target", "op") and not log._building and hasattr(node, "graph"):
                log._record(EditKind.RETARGET, node, node.graph)

        return __setattr__

    return make


def _recompiling(log: EditLog) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def recompile(module: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(module, *args, **kwargs)
            log._recompiled(module.graph)
            return result

        return recompile

    return make


def _replacing(log: EditLog) -> Callable[[Any], Any]:
    """``gm.graph = new_graph`` (``legalize_graph``, a rebuilt graph): the old graph is no
    longer the module's."""

    def make(original: Any) -> Any:
        def graph_setter(module: Any, graph: Any) -> None:
            old = module.__dict__.get("_graph")
            original.fset(module, graph)
            log._replaced(old, graph)

        return property(original.fget, graph_setter, original.fdel, original.__doc__)

    return make


def _calling(log: EditLog) -> Callable[[Any], Any]:
    """A call of a GraphModule whose graph changed since its last recompile runs old code."""

    def make(original: Any) -> Any:
        def __call__(wrapped: Any, module: Any, *args: Any, **kwargs: Any) -> Any:
            stale = None if log._paused or log._tracing else log.stale_edit(module)
            if stale is not None:
                where = log._where()
                if where is not None:
                    log.stale_calls.append(StaleCall(where[0], stale, where[1]))
            return original(wrapped, module, *args, **kwargs)

        return __call__

    return make


def _tracing(log: EditLog) -> Callable[[Any], Any]:
    def make(original: Any) -> Any:
        def trace(tracer: Any, *args: Any, **kwargs: Any) -> Any:
            log._tracing += 1
            log.traces += 1
            try:
                return original(tracer, *args, **kwargs)
            finally:
                log._tracing -= 1

        return trace

    return make


def _torch_fx_patches(log: EditLog) -> list[_Patch]:
    import torch.fx

    node, graph = torch.fx.Node, torch.fx.Graph
    return [
        (graph, "create_node", _creating(log, EditKind.CREATE)),
        (graph, "node_copy", _copying(log)),
        (graph, "erase_node", _erasing(log)),
        (node, "_update_args_kwargs", _on_node(log, EditKind.REWIRE)),
        (node, "_replace_input_with", _on_node(log, EditKind.REWIRE)),
        (node, "_prepend", _moving(log)),
        (node, "__setattr__", _retargeting(log)),
        (torch.fx.GraphModule, "recompile", _recompiling(log)),
        (torch.fx.GraphModule, "graph", _replacing(log)),
        (torch.fx.Tracer, "trace", _tracing(log)),
        (torch.fx.graph_module._WrappedCall, "__call__", _calling(log)),
    ]


def _fxcore_patches(log: EditLog) -> list[_Patch]:
    from fxcore._symbolic_trace import Tracer
    from fxcore.graph import Graph
    from fxcore.graph_module import GraphModule
    from fxcore.node import Node

    return [
        (Graph, "create_node", _creating(log, EditKind.CREATE)),
        (Graph, "node_copy", _copying(log)),
        (Graph, "erase_node", _erasing(log)),
        (Node, "_set_inputs", _on_node(log, EditKind.REWIRE)),
        (Node, "prepend", _moving(log)),
        (Node, "__setattr__", _retargeting(log)),
        (GraphModule, "recompile", _recompiling(log)),
        (GraphModule, "graph", _replacing(log)),
        (Tracer, "trace", _tracing(log)),
    ]
