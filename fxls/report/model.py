"""The report of one analysed file: plain data that crosses the worker boundary.

Encoded here (``to_dict``); decoded only by ``fxls.report.wire.check_report``, which trusts
nothing of what the analysed code may have changed.

Spans are in Python code-position units (1-based lines, 0-based UTF-8 byte columns) as
fxcore records them; ``fxls.project.source_text`` converts them to editor units, once, at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import StrEnum
from typing import Any, Literal

from fxls.codes import Severity

#: what a graph node does (torch.fx's six ops)
NodeOp = Literal["placeholder", "get_attr", "call_function", "call_method", "call_module",
                 "output"]


class TraceStatus(StrEnum):
    """How far tracing a class got (the JSON ``modules[].status``)."""

    TRACED = "traced"
    PARTIAL = "partial"  # a graph, with problems tracing recovered from
    FAILED = "failed"  # constructed, not traced
    SKIPPED = "skipped"  # not constructed

    @property
    def has_graph(self) -> bool:
        return self in (TraceStatus.TRACED, TraceStatus.PARTIAL)

    @property
    def rank(self) -> int:
        """Worse is lower: skipped < failed < partial < traced."""
        return _STATUS_RANKS.index(self)


@dataclass(slots=True)
class Span:
    """A region of a file: 1-based lines, 0-based UTF-8 byte columns (end exclusive)."""

    file: str
    line: int
    end_line: int
    col: int
    end_col: int

    def key(self) -> tuple[str, int, int, int, int]:
        return (self.file, self.line, self.col, self.end_line, self.end_col)

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "end_line": self.end_line,
                "col": self.col, "end_col": self.end_col}


@dataclass(slots=True)
class RelatedInfo:
    span: Span
    message: str


@dataclass(slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    module: str | None = None
    related: list[RelatedInfo] = field(default_factory=list)
    #: what quick fixes need (rewrite id, replacement text, ...); opaque to the CLI
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)  # also from its plain string


@dataclass(slots=True)
class NodeInfo:
    """One graph node as the editor shows it (hover, inlay hints)."""

    name: str
    op: NodeOp
    target: str
    args: str
    kwargs: str
    users: list[str]
    span: Span | None = None
    #: sizes; a symbolic size of an exported graph is its symbol (``"s0"``)
    shape: list[int | str] | None = None
    dtype: str | None = None
    module_path: str | None = None
    module_type: str | None = None
    module_params: int | None = None
    backward: str | None = None
    #: the arguments passed, by parameter name: [[name, formatted value], ...]
    named_args: list[list[str]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "op": self.op, "target": self.target, "args": self.args,
            "kwargs": self.kwargs, "users": list(self.users),
            "span": self.span.to_dict() if self.span is not None else None,
            "shape": self.shape,
            "dtype": self.dtype, "module_path": self.module_path,
            "module_type": self.module_type, "module_params": self.module_params,
            "backward": self.backward, "named_args": self.named_args,
        }


@dataclass(slots=True)
class CallInfo:
    """A call in ``forward`` that made no node of its own (a submodule traced through, or a
    helper function), for one instance: the nodes it produced, by name, and those that
    crossed its boundary."""

    span: Span
    #: the submodule's qualified name (``layer1.0``); None for a helper function
    path: str | None
    module_type: str | None
    nodes: list[str]
    inputs: list[str]
    outputs: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"span": self.span.to_dict(), "path": self.path,
                "module_type": self.module_type, "nodes": list(self.nodes),
                "inputs": list(self.inputs), "outputs": list(self.outputs)}


@dataclass(slots=True)
class ClassPlace:
    """Where a class is defined: its source file and the line of its ``class`` statement."""

    file: str
    line: int


@dataclass(slots=True)
class BreakInfo:
    """A graph break between two subgraphs dynamo compiled: where, and torch's reason."""

    span: Span | None
    reason: str
    gb_id: str | None = None


@dataclass(slots=True)
class TargetGraph:
    """A graph the real torch made of a module: export's ATen program, or one subgraph
    dynamo compiled. Node spans are the analysed file's lines that produced them."""

    nodes: list[NodeInfo] = field(default_factory=list)
    code: str | None = None
    #: the class of each submodule the nodes came from, by qualified name
    module_types: dict[str, str] = field(default_factory=dict)
    #: export's graph is draft_export's (export itself failed)
    drafted: bool = False
    #: a dynamo subgraph: the break that ended it (None for the last one)
    break_after: BreakInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [n.to_dict() for n in self.nodes], "code": self.code,
                "module_types": dict(self.module_types), "drafted": self.drafted,
                "break_after": _plain(self.break_after)}


@dataclass(slots=True)
class TargetGraphs:
    """What the export and compile tiers made of a module (``ModuleReport.target_graphs``):
    their graphs, and the module's eager outputs on the inputs they ran it on."""

    export: TargetGraph | None = None
    compile: list[TargetGraph] = field(default_factory=list)
    #: the eager outputs summarised (``analysis.pipeline.eager_outputs``): a fix of an export
    #: or compile problem must keep them
    eager_outputs: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"export": self.export.to_dict() if self.export is not None else None,
                "compile": [g.to_dict() for g in self.compile],
                **({"eager_outputs": self.eager_outputs} if self.eager_outputs is not None
                   else {})}


@dataclass(slots=True)
class ModuleReport:
    name: str
    status: TraceStatus
    node_count: int = 0
    span: Span | None = None  # the class name
    nodes: list[NodeInfo] = field(default_factory=list)
    code: str | None = None  # generated forward code, when traced
    #: the traced graph's outputs on seeded example inputs, summarised (per output tensor:
    #: sum, sum of absolute values); lets a fix be checked to keep the graph's behaviour
    output_signature: list[float] | None = None
    #: the root class this one was traced inside (a submodule instance of it), or None
    via: str | None = None
    #: what built the instance: a factory call (``resnet18()``), a pragma or an entry point
    entry: str | None = None
    #: why the class was not traced (status ``skipped``/``failed``), in a user's words
    reason: str | None = None
    #: the calls of submodules and helpers in the graph's ``forward`` code, per instance
    calls: list[CallInfo] = field(default_factory=list)
    #: the class of every submodule whose ``forward`` made nodes, by qualified name
    module_types: dict[str, str] = field(default_factory=dict)
    #: where each submodule class of the graph is defined, by the class's qualified name
    #: (``module_types``' values, nodes' ``module_type``)
    class_places: dict[str, ClassPlace] = field(default_factory=dict)
    #: how the class fared under each other targeted tracer: ``{"export": "exported",
    #: "compile": "2 graph breaks"}`` (symbolic tracing is ``status``)
    targets: dict[str, str] = field(default_factory=dict)
    #: the graphs the export and compile tiers made (hover, inlay hints, the graph page) and
    #: the eager outputs a fix of their problems must keep
    target_graphs: TargetGraphs | None = None

    def __post_init__(self) -> None:
        self.status = TraceStatus(self.status)  # also from its plain string

    @property
    def eager_outputs(self) -> list[float] | None:
        return self.target_graphs.eager_outputs if self.target_graphs is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "status": self.status, "node_count": self.node_count,
            "span": self.span.to_dict() if self.span is not None else None,
            "nodes": [n.to_dict() for n in self.nodes], "code": self.code,
            "output_signature": self.output_signature, "via": self.via,
            "entry": self.entry, "reason": self.reason,
            **({"calls": [c.to_dict() for c in self.calls]} if self.calls else {}),
            **({"module_types": dict(self.module_types)} if self.module_types else {}),
            **({"class_places": {name: {"file": place.file, "line": place.line}
                                 for name, place in self.class_places.items()}}
               if self.class_places else {}),
            **({"targets": dict(self.targets)} if self.targets else {}),
            **({"target_graphs": self.target_graphs.to_dict()}
               if self.target_graphs is not None else {}),
        }

    def verdict(self) -> str:
        """``traced`` / ``partial`` / ``traced via ResNet (resnet18())`` /
        ``not constructed: <reason>``: the status as hover and code lens show it; a class
        that targets export or compile adds each (``traced · export exported · compile 2
        graph breaks``), without symbolic tracing's status when it does not target it."""
        others = [f"{target} {status}" for target, status in self.targets.items()
                  if target != "symbolic_trace"]
        if not others or not self.status.has_graph:
            return self._traced_verdict()
        if "symbolic_trace" not in self.targets:
            return " · ".join(others)
        return " · ".join([self._traced_verdict(), *others])

    def _traced_verdict(self) -> str:
        if self.status.has_graph:
            how = str(self.status)
            if self.via:
                how += f" via {self.via}"
            if self.entry:
                how += f" ({self.entry})"
            return how
        if self.status is TraceStatus.SKIPPED:
            return f"not constructed: {self.reason}" if self.reason else "not traced"
        return f"failed: {self.reason}" if self.reason else "failed"


@dataclass(slots=True)
class PassGraphRun:
    """One pass run on one graph: what it changed, or the problem it had."""

    graph: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    rewired: list[str] = field(default_factory=list)
    #: the first problem (a diagnostic's message), None when the pass ran cleanly
    problem: str | None = None
    #: the nodes the pass created or changed, each spanning the pass line that did it
    nodes: list[NodeInfo] = field(default_factory=list)
    #: the graph's code before and after the pass (the before/after view)
    before: str | None = None
    after: str | None = None
    #: the modules the pass put in place of others (``setattr(parent, name, fused)``), by
    #: the path the graph calls: the class of the new one
    swapped: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """``Net: +1 -2, 1 rewired`` (or ``Net: no change`` / ``Net: <problem>``)."""
        if self.problem is not None:
            return f"{self.graph}: {self.problem}"
        parts = [f"+{len(self.added)} -{len(self.removed)}"]
        if self.rewired:
            parts.append(f"{len(self.rewired)} rewired")
        if not (self.added or self.removed or self.rewired):
            parts = ["no change"]
        return f"{self.graph}: {', '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph, "added": list(self.added), "removed": list(self.removed),
                "rewired": list(self.rewired), "problem": self.problem,
                "nodes": [n.to_dict() for n in self.nodes], "before": self.before,
                "after": self.after,
                **({"swapped": dict(self.swapped)} if self.swapped else {})}


@dataclass(slots=True)
class PassReport:
    """A pass of the file (a function, Transformer, PassBase, PassManager) and its runs."""

    name: str
    kind: str
    span: Span | None = None
    runs: list[PassGraphRun] = field(default_factory=list)
    #: which graphs it ran on: ``models`` (the file's), ``pass_models``, ``representative``
    #: or ``import`` (the file ran it itself)
    graphs_from: str = "models"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind,
                "span": self.span.to_dict() if self.span is not None else None,
                "runs": [r.to_dict() for r in self.runs], "graphs_from": self.graphs_from}

    @property
    def has_problem(self) -> bool:
        return any(run.problem is not None for run in self.runs)


@dataclass(slots=True)
class FileReport:
    path: str
    modules: list[ModuleReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: graphs built by passes at module level (bound to globals), for hover on pass code
    graphs: list[ModuleReport] = field(default_factory=list)
    #: the file's FX passes and what each did to each graph it ran on
    passes: list[PassReport] = field(default_factory=list)
    #: the tracers the file's classes must pass (SPEC: Targets), and how they were chosen
    targets: list[str] = field(default_factory=list)
    targets_because: str | None = None
    #: the models' report is complete (graphs, shapes, backward nodes): a report sent ahead
    #: of the export/compile tiers and the passes can answer hover and inlay hints
    models_complete: bool = False
    #: the workspace files the analysis read besides the file (modules it imported, data
    #: files it opened) by their digests; None: too many or unreadable (``files_read``)
    reads: dict[str, str] | None = field(default_factory=dict)

    @property
    def default_targets(self) -> bool:
        """Symbolic tracing alone, by default (nothing chose it): what fxls always did, so
        the outputs leave it unsaid."""
        return self.targets == ["symbolic_trace"] and (
            self.targets_because or "").startswith("the default")

    def to_dict(self, partial: dict[str, Any] | None = None) -> dict[str, Any]:
        """Plain data. ``partial`` is a report sent ahead of this one (as plain data): the
        diagnostics it holds unchanged are not repeated: ``from_partial`` lists, for each,
        its place in this report and its index in the partial one (``check_report`` puts
        them back)."""
        diagnostics = [_plain(d) for d in self.diagnostics]
        data: dict[str, Any] = {
            "path": self.path,
            "modules": [m.to_dict() for m in self.modules],
            "diagnostics": diagnostics,
            "timings_ms": dict(self.timings_ms),
            "graphs": [g.to_dict() for g in self.graphs],
            "passes": [p.to_dict() for p in self.passes],
            "targets": list(self.targets), "targets_because": self.targets_because,
            "models_complete": self.models_complete,
            "reads": None if self.reads is None else dict(self.reads),
        }
        if partial is not None:
            sent = {_diagnostic_key(d): (i, d) for i, d in enumerate(partial["diagnostics"])}
            new, reused = [], []
            for place, item in enumerate(diagnostics):
                index, old = sent.get(_diagnostic_key(item), (-1, None))
                if old == item:
                    reused.append([place, index])
                else:
                    new.append(item)
            data["diagnostics"], data["from_partial"] = new, reused
        return data


def _diagnostic_key(data: dict[str, Any]) -> tuple[Any, ...]:
    span = data["span"]
    return (data["code"], span["file"], span["line"], span["col"], span["end_line"],
            span["end_col"])


_STATUS_RANKS = (TraceStatus.SKIPPED, TraceStatus.FAILED, TraceStatus.PARTIAL,
                 TraceStatus.TRACED)
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """Like ``dataclasses.asdict`` without its deep copies (reports are large and hot)."""
    if is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
