"""A trace that reports every untraceable construct instead of stopping at the first.

``trace_collecting_issues`` traces like ``symbolic_trace`` but, where torch.fx would raise,
it records a :class:`TraceIssue` at the user expression responsible and carries on with a
stand-in value:

- a traced value used as a condition is True the first time a code position asks and False
  afterwards, so ``if`` takes one branch and every loop ends;
- iterating a traced value yields one element (``x[0]``);
- ``len``/``int``/``index`` of a traced value give 1 and ``float`` 1.0;
- ``**`` of a traced value (``f(**kwargs)`` where ``kwargs`` is an input) expands to nothing;
- an exception inside a submodule's ``forward`` makes that submodule an opaque
  ``call_module`` node (its partial nodes are removed) and tracing continues in the caller;
  an exception in the root ends the trace with the graph built so far.

A stand-in can itself cause an exception: a guard clause (``if x.shape[-1] != 8: raise``)
raises when its condition is taken as True, ``len(x.shape[-2:]) != 2`` when a length is 1,
``b, n, _, h = *x.shape, heads`` when iterating gives one element. Such an exception would
end the trace before the sites after it. So the trace is searched: each stand-in is a
*decision* recorded with the code position that asked for it, and an exception that follows
recovered issues makes the trace run again with one of the decisions made before it changed
(the other branch; 2, 3 or 4 for a length or an iteration), most recent first, keeping a
change only when the trace gets further (more sites before the first such exception, or
fewer of them; at equal counts, one whose first such exception is not a ``raise`` statement
of the model's code: a guard clause raising is the stand-in's doing, a torch call refusing a
traced value is torch.fx's own stop). When no change of decision gets further and that
exception came from a line where a traced *size* reached code that needs a number
(``torch.tensor(channels)`` with ``channels`` from ``x.shape``), the trace runs again with the
sizes in that frame's local variables static from that line on (``fxcore._static_sizes``):
the exception is kept as the issue at that line, and the sites after it are found too.
A forward parameter that defaults to ``None`` is a placeholder like any other, so
``if targets is not None:`` goes in and ``for t in targets`` is an issue torch.fx stops at;
the stand-in target that follows is nothing the model ever sees. The user's fix is
``concrete_args={"targets": None}``: when such a placeholder itself was iterated, tested or
converted and an exception followed, the trace runs again with it ``None`` (those issues
kept), and the search goes on from that trace (the call without that argument is what the
model's eager run sees). Likewise when a trace ends at an exception no stand-in preceded
(``if encoder_hidden_states is not None: ... raise``) while parameters defaulting to ``None``
are placeholders: with them ``None`` (the exception kept), if that trace gets further. The
search is bounded (``max_retraces``, ``time_budget``); the
issues reported are those of the best trace, and the refusals (control flow, iteration,
conversion) other traces of the search met before their first follow-on: the other side of a
branch the best trace did not take holds sites torch.fx stops at too.

Only what torch.fx would hit is reported. torch's C argument parser asks the values of a
size argument for ``__index__`` (``torch.zeros((B, H))``, ``torch.eye(n)``) before it looks at
``__torch_function__``. torch.fx's Proxy has no ``__index__``: the parser's probe fails, and
the call becomes a node (or, for ``torch.ones(B, C)``, fails with the parser's TypeError). The
recovering proxy converts (``range(n)`` must go on), so it first finds the function being
called (``fxcore._calls``): inside a call to a torch C function it refuses the conversion
just as torch.fx's Proxy does. When the callee cannot be named without running user code,
the conversion is held back as a *probe*: if the call then records a node that takes the
converted value, the parser was only probing and it is forgotten; anything else makes it an
issue, and a ``TypeError`` raised by that same call is reported as torch.fx reports it.

``has_forward`` tells whether a module class defines ``forward`` at all (abstract bases such
as Hugging Face ``*PreTrainedModel`` do not; torch.fx then raises ``NotImplementedError``).
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import inspect
import linecache
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore._calls import UNKNOWN, called_function, parsed_by_torch
from fxcore._module_state import restore, snapshot
from fxcore._static_sizes import is_size, static_sizes_at
from fxcore._symbolic_trace import Tracer
from fxcore._tensor_checks import fix_lines
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Node
from fxcore.proxy import Proxy
from fxcore.source import (
    SourceSpan,
    is_internal_file,
    span_of_frame,
    spans_of_traceback,
    user_stack,
)

__all__ = [
    "IssueKind",
    "TraceIssue",
    "CollectedTrace",
    "RecoveringTracer",
    "trace_collecting_issues",
    "has_forward",
]


class IssueKind(enum.Enum):
    CONTROL_FLOW = "control_flow"
    ITERATION = "iteration"
    PYTHON_VALUE = "python_value"
    EXCEPTION = "exception"


@dataclass
class TraceIssue:
    kind: IssueKind
    message: str
    span: SourceSpan | None
    stack: tuple[SourceSpan, ...] = ()
    exception_type: str | None = None
    #: an exception that followed an earlier recovered issue (maybe caused by a stand-in)
    after_recovery: bool = False
    #: for PYTHON_VALUE: which conversion ("len", "int", "float", "index")
    conversion: str | None = None
    #: the module path being traced when it happened ("" for the root)
    module_path: str = ""
    #: EXCEPTION raised by a ``raise`` statement of user code (not by a call refusing it)
    user_raise: bool = False


@dataclass
class CollectedTrace:
    graph: Graph | None
    graph_module: GraphModule | None
    issues: list[TraceIssue] = field(default_factory=list)
    partial: bool = False
    #: node names of submodules that failed and were kept as opaque call_module nodes
    opaque_modules: list[str] = field(default_factory=list)
    #: why the graph has no GraphModule: its generated code failed to build (e.g. the
    #: SyntaxError of a submodule named ``'a"b'``, which torch.fx's symbolic_trace raises)
    codegen_error: Exception | None = None


class _TooManyIssues(Exception):
    pass


#: a stand-in decision: what asked for it (kind, code, instruction, how many times this
#: position had asked before in this trace)
_DecisionKey = tuple[str, types.CodeType, int, int]


@dataclass(frozen=True)
class _Decision:
    key: _DecisionKey
    value: Any
    #: how many issues had been recorded when it was made (to order it before an exception)
    issues_before: int


@dataclass
class _StandIns:
    """The stand-in values of one trace: those the search chose, those the trace used."""

    #: decision key -> the value the search chose for it (see the module docstring)
    choices: dict[_DecisionKey, Any]
    decisions: list[_Decision] = field(default_factory=list)
    #: (kind, code, instruction) -> how many times that position has asked in this trace
    asked: dict[tuple[str, types.CodeType, int], int] = field(default_factory=dict)

    def carried(self) -> dict[_DecisionKey, Any]:
        """The search's choices this trace used: where a retrace of it starts from."""
        return {d.key: d.value for d in self.decisions if d.key in self.choices}


#: the values a search tries instead of a stand-in, by what asked for it
_ALTERNATIVES: dict[str, tuple[Any, ...]] = {
    "bool": (True, False),
    "iter": (1, 2, 3, 4),
    "len": (1, 2, 3, 4),
    "index": (1, 2, 3, 4),
    "int": (1, 2, 3, 4),
}


def _user_frame(start: types.FrameType | None) -> types.FrameType | None:
    frame = start
    depth = 0
    while frame is not None and depth < 64:
        if not is_internal_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
        depth += 1
    return None


_Location = tuple[types.CodeType, int]


def _location(frame: types.FrameType | None) -> _Location | None:
    return None if frame is None else (frame.f_code, _stable_lasti(frame))


_PRECALL = dis.opmap.get("PRECALL")
_CALL = dis.opmap.get("CALL")
_CACHE = dis.opmap.get("CACHE")


def _stable_lasti(frame: types.FrameType) -> int:
    """The frame's instruction, the same however warm its code is. Python 3.11's adaptive
    interpreter, once a call site is specialised (``PRECALL_NO_KW_LEN`` after a few runs),
    calls ``len``/``isinstance``... from ``PRECALL`` instead of ``CALL``: ``f_lasti`` moves back
    by one instruction, and a stand-in decision keyed by it would be lost on a retrace."""
    raw = frame.f_code.co_code
    lasti = frame.f_lasti
    if _PRECALL is None or not 0 <= lasti < len(raw) or raw[lasti] != _PRECALL:
        return lasti
    index = lasti + 2
    while index < len(raw) and raw[index] == _CACHE:
        index += 2
    return index if index < len(raw) and raw[index] == _CALL else lasti


def _opname_at(frame: types.FrameType) -> str:
    """The instruction ``frame`` is executing (3.11+: ``co_code`` holds no quickened ops)."""
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    return dis.opname[code[lasti]] if 0 <= lasti < len(code) else ""


def _traceback_location(tb: types.TracebackType | None) -> _Location | None:
    """Where the innermost user frame of a traceback was when the error passed through it."""
    found: _Location | None = None
    while tb is not None:
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            found = (tb.tb_frame.f_code, tb.tb_lasti)
        tb = tb.tb_next
    return found


def _definition_span(fn: Any) -> SourceSpan | None:
    """The first line of a function's definition (its first decorator, if decorated)."""
    code = getattr(fn, "__code__", None)
    if code is None or is_internal_file(code.co_filename):
        return None
    text = linecache.getline(code.co_filename, code.co_firstlineno).rstrip("\r\n")
    raw = text.encode("utf-8")
    body = raw.lstrip()
    return SourceSpan(
        code.co_filename,
        code.co_firstlineno,
        code.co_firstlineno,
        len(raw) - len(body),
        len(raw.rstrip()),
        code.co_name,
    )


def has_forward(module: torch.nn.Module | type[torch.nn.Module]) -> bool:
    """Whether the module's class defines ``forward`` (tracing needs one).

    ``nn.Module`` itself only has a stand-in that raises ``NotImplementedError``; abstract
    bases (Hugging Face ``*PreTrainedModel``) inherit it. Cheap: no instance needed.

    >>> has_forward(torch.nn.Linear), has_forward(torch.nn.Module)
    (True, False)
    """
    cls = module if isinstance(module, type) else type(module)
    return getattr(cls, "forward", None) is not torch.nn.Module.forward


class _RecoveringProxy(Proxy):
    def __int__(self) -> int:
        _refuse_torch_probe(self, sys._getframe(1), "int")
        return self.tracer.python_value(self, "int", 1)  # type: ignore[attr-defined]

    def __float__(self) -> float:
        _refuse_torch_probe(self, sys._getframe(1), "float")
        return self.tracer.python_value(self, "float", 1.0)  # type: ignore[attr-defined]

    def __index__(self) -> int:
        _refuse_torch_probe(self, sys._getframe(1), "index")
        return self.tracer.python_value(self, "index", 1)  # type: ignore[attr-defined]


#: what Python says converting an object that has no such method (torch.fx's Proxy)
_NO_CONVERSION = {
    "index": "'{}' object cannot be interpreted as an integer",
    "int": "int() argument must be a string, a bytes-like object or a real number, not '{}'",
    "float": "float() argument must be a string or a real number, not '{}'",
}


def _refuse_torch_probe(proxy: Proxy, caller: types.FrameType, conversion: str) -> None:
    """Inside a call to a torch C function, convert nothing, as torch.fx's Proxy (which has no
    ``__index__``/``__int__``/``__float__``) does: torch's parser then dispatches the call to
    ``__torch_function__`` (``torch.eye(n)``) or refuses it (``torch.ones(B, C)``)."""
    callee = called_function(caller)
    if callee is UNKNOWN:
        proxy.tracer._probes.hold_next = True  # type: ignore[attr-defined]
    elif callee is not None and parsed_by_torch(callee):
        raise TypeError(_NO_CONVERSION[conversion].format(type(proxy).__name__))


class _TensorLinesProxy(_RecoveringProxy):
    """The proxies of a trace with ``tensor_lines``: on those lines the model's isinstance
    sees a tensor. Its own class because every isinstance of a proxy that fails the type
    check reads ``__class__``: a Python property there costs every other trace too."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        marked = self.tracer.tensor_lines  # type: ignore[attr-defined]
        frame = sys._getframe(1)
        file = frame.f_code.co_filename
        for (marked_file, lines), issue in marked.items():
            if file == marked_file and frame.f_lineno in lines and not is_size(self.node):
                self.tracer.tensor_check_answered(issue)  # type: ignore[attr-defined]
                return torch.Tensor
        return type(self)


# Python names a type in its own errors ("'Proxy' object does not support item assignment"):
# say what torch.fx says.
_RecoveringProxy.__name__ = _TensorLinesProxy.__name__ = "Proxy"


@dataclass
class _Probe:
    """A conversion not yet known to be an issue (see the module docstring)."""

    location: _Location | None
    node: Node
    issue: TraceIssue


@dataclass
class _Probes:
    """A trace's conversions held back as probes, pending until a node settles them."""

    pending: list[_Probe] = field(default_factory=list)
    #: set when the callee of a conversion is unknown: hold that conversion as a probe
    hold_next: bool = False


_CONVERSION_MESSAGES = {
    "len": "'len' is not supported in symbolic tracing: the length of a traced value is "
    "unknown while tracing",
    "int": "int() of a traced value: its value is unknown while tracing",
    "float": "float() of a traced value: its value is unknown while tracing",
    "index": "a traced value used as a Python integer (range(), list index...): its value "
    "is unknown while tracing",
}


class RecoveringTracer(Tracer):
    """A Tracer that records issues and substitutes stand-in values instead of raising."""

    def __init__(
        self,
        *,
        leaf_modules: tuple[str, ...] = (),
        max_issues: int = 100,
        choices: dict[_DecisionKey, Any] | None = None,
        **tracer_kwargs: Any,
    ) -> None:
        super().__init__(**tracer_kwargs)
        self.stand_ins = _StandIns(dict(choices or {}))
        self.issues: list[TraceIssue] = []
        self.opaque_modules: list[str] = []
        self._leaf_names = set(leaf_modules)
        self._max_issues = max_issues
        self._seen: set[tuple[IssueKind, SourceSpan | None]] = set()
        self._module_path: list[str] = [""]
        self._probes = _Probes()
        #: where the last iteration was reported (its ``len`` length hint is not an issue)
        self._iterated_at: _Location | None = None
        #: the root's definition, for errors raised before any user code ran
        self._definition_spans: tuple[SourceSpan, ...] = ()
        #: lines whose exception was raised again (a static-size retrace that did not help)
        self.raised_again: set[tuple[str, int]] = set()
        #: statements where the model's isinstance sees a traced value as a tensor (file,
        #: lines) -> the exception that was raised there (fxcore._tensor_checks)
        self.tensor_lines: dict[tuple[str, range], TraceIssue] = {}
        #: parameters defaulting to None whose placeholder was iterated, tested or converted:
        #: name -> the issue recorded there
        self.none_defaults: dict[str, TraceIssue] = {}

    # -- leaf modules from settings ------------------------------------------------------
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        cls = type(m)
        if (
            cls.__name__ in self._leaf_names
            or f"{cls.__module__}.{cls.__qualname__}" in self._leaf_names
            or getattr(cls, "__fxls_leaf__", False)
        ):
            return True
        return super().is_leaf_module(m, module_qualified_name)

    def proxy(self, node: Node) -> Proxy:
        if self.tensor_lines:
            return _TensorLinesProxy(node, self)
        return _RecoveringProxy(node, self)

    def _decide(self, kind: str, frame: types.FrameType | None, default: Any) -> Any:
        """The stand-in for what ``frame`` asks: the search's choice for this position and
        visit, else ``default``; recorded either way."""
        if frame is None or kind not in _ALTERNATIVES:
            return default
        stand_ins = self.stand_ins
        lasti = _stable_lasti(frame)
        position = (kind, frame.f_code, lasti)
        visit = stand_ins.asked.get(position, 0)
        stand_ins.asked[position] = visit + 1
        key = (kind, frame.f_code, lasti, visit)
        value = stand_ins.choices.get(key, default)
        stand_ins.decisions.append(_Decision(key, value, len(self.issues)))
        return value

    # -- recording -----------------------------------------------------------------------
    def _issue(
        self, kind: IssueKind, message: str, frame: types.FrameType | None, **extra: Any
    ) -> TraceIssue:
        span = span_of_frame(frame) if frame is not None else None
        stack = user_stack(frame) if frame is not None else ()
        return TraceIssue(kind, message, span, stack, module_path=self._module_path[-1], **extra)

    def _add(self, issue: TraceIssue) -> None:
        key = (issue.kind, issue.span)
        if key in self._seen:
            return
        self._seen.add(key)
        self.issues.append(issue)
        if len(self.issues) >= self._max_issues:
            raise _TooManyIssues

    def _record(
        self, kind: IssueKind, message: str, frame: types.FrameType | None, **extra: Any
    ) -> None:
        if self._probes.pending:
            self._settle_probes()
        span = span_of_frame(frame) if frame is not None else None
        if (kind, span) in self._seen:
            return
        self._add(self._issue(kind, message, frame, **extra))

    def _settle_probes(self, node: Node | None = None, location: _Location | None = None) -> None:
        """Forget probes that ``node`` (recorded at ``location``) consumed; report the rest.

        A probe made at ``location`` stays pending while other nodes are recorded there
        (``get_attr`` of an argument before the call's own node).
        """
        probes, self._probes.pending = self._probes.pending, []
        for probe in probes:
            if node is not None and probe.location is not None and probe.location == location:
                if probe.node not in node._input_nodes:
                    self._probes.pending.append(probe)
                continue
            probe.node.meta["consumed_by_issue"] = IssueKind.PYTHON_VALUE.value
            self._add(probe.issue)

    def create_node(
        self,
        kind: str,
        target: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if self._probes.pending:
            self._settle_probes(node, _location(_user_frame(sys._getframe(1))))
        return node

    def tensor_check_answered(self, issue: TraceIssue) -> None:
        """An isinstance in a marked statement was answered: its exception is the issue."""
        if (issue.kind, issue.span) not in self._seen and len(self.issues) < self._max_issues:
            self._seen.add((issue.kind, issue.span))
            self.issues.append(dataclasses.replace(issue, module_path=self._module_path[-1]))

    def _note_none_default(self, obj: Proxy) -> None:
        """``obj`` is a parameter that defaults to None (the issue just recorded is its)."""
        node = obj.node
        if (node.op == "placeholder" and node.args == (None,) and self.issues
                and str(node.target) not in self.none_defaults):
            self.none_defaults[str(node.target)] = self.issues[-1]

    def to_bool(self, obj: Proxy) -> bool:
        frame = _user_frame(sys._getframe(1))
        obj.node.meta["consumed_by_issue"] = IssueKind.CONTROL_FLOW.value
        self._record(
            IssueKind.CONTROL_FLOW,
            "symbolically traced variables cannot be used as inputs to control flow",
            frame,
        )
        self._note_none_default(obj)
        if frame is None:
            return False
        # True the first time this position asks in this trace
        first = ("bool", frame.f_code, _stable_lasti(frame)) not in self.stand_ins.asked
        return bool(self._decide("bool", frame, first))

    def iter(self, obj: Proxy) -> Iterator[Any]:
        frame = _user_frame(sys._getframe(1))
        self._record(IssueKind.ITERATION, "Proxy object cannot be iterated", frame)
        self._note_none_default(obj)
        self._iterated_at = _location(frame)
        count = self._decide("iter", frame, 1)
        return iter([obj[i] for i in range(count)])

    def keys(self, obj: Proxy) -> Any:
        frame = _user_frame(sys._getframe(1))
        if frame is not None and _opname_at(frame) in ("DICT_MERGE", "DICT_UPDATE"):
            # ``f(**kwargs)``/``{**kwargs}`` of a traced value: torch.fx fails iterating
            # its keys; expanding to nothing keeps keyword names strings and lets the call run
            self._record(IssueKind.ITERATION, "Proxy object cannot be iterated", frame)
            return ()
        return super().keys(obj)

    def length(self, obj: Proxy) -> int:
        return self.python_value(obj, "len", 1)

    def python_value(self, obj: Proxy, conversion: str, stand_in: Any) -> Any:
        frame = _user_frame(sys._getframe(1))
        if self._probes.hold_next:
            self._probes.hold_next = False
            message = _CONVERSION_MESSAGES[conversion]
            issue = self._issue(IssueKind.PYTHON_VALUE, message, frame, conversion=conversion)
            self._probes.pending.append(_Probe(_location(frame), obj.node, issue))
            return stand_in
        if frame is not None and _location(frame) == self._iterated_at:
            return stand_in  # the length hint of ``f(*x)``/``list(x)`` after iterating x
        obj.node.meta["consumed_by_issue"] = IssueKind.PYTHON_VALUE.value
        self._record(
            IssueKind.PYTHON_VALUE, _CONVERSION_MESSAGES[conversion], frame, conversion=conversion
        )
        self._note_none_default(obj)
        return self._decide(conversion, frame, stand_in)

    def record_exception(self, error: BaseException) -> None:
        if self._probes.pending:
            where = _traceback_location(error.__traceback__)
            if isinstance(error, TypeError) and where is not None:
                # a call whose arguments torch's parser probed and then refused
                self._probes.pending = [p for p in self._probes.pending if p.location != where]
            self._settle_probes()
        spans = spans_of_traceback(error.__traceback__) or self._definition_spans
        span = spans[-1] if spans else None
        if span is not None and (IssueKind.EXCEPTION, span) in self._seen:
            self.raised_again.add((span.file, span.line))
            return
        self._seen.add((IssueKind.EXCEPTION, span))
        outer = user_stack(sys._getframe(1))
        where = _traceback_location(error.__traceback__)
        user_raise = where is not None and 0 <= where[1] < len(where[0].co_code) and (
            dis.opname[where[0].co_code[where[1]]] == "RAISE_VARARGS")
        self.issues.append(
            TraceIssue(
                IssueKind.EXCEPTION,
                f"{type(error).__name__}: {error}",
                span,
                outer + spans,
                exception_type=type(error).__name__,
                after_recovery=any(i.kind is not IssueKind.EXCEPTION for i in self.issues),
                module_path=self._module_path[-1],
                user_raise=user_raise,
            )
        )

    def create_args_for_root(
        self, root_fn: Callable[..., Any], is_module: bool, concrete_args: Any = None
    ) -> tuple[Callable[..., Any], list[Any]]:
        try:
            return super().create_args_for_root(root_fn, is_module, concrete_args)
        except Exception:
            # e.g. "co_varnames is too small" (torch.fx's too): a decorator's wrapper gets
            # forward's parameters. Point at the forward and at the wrapper's definition.
            spans = (_definition_span(inspect.unwrap(root_fn)), _definition_span(root_fn))
            self._definition_spans = tuple(dict.fromkeys(s for s in spans if s is not None))
            raise

    # -- recovery points -----------------------------------------------------------------
    def _run_submodule(
        self,
        m: torch.nn.Module,
        qualified_name: str,
        forward: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        last_before = self.graph._root._prev
        self._module_path.append(qualified_name)
        try:
            return forward(*args, **kwargs)
        except _TooManyIssues:
            raise
        except Exception as error:
            self.record_exception(error)
            self._erase_after(last_before)
            self.opaque_modules.append(qualified_name)
            return self.create_proxy("call_module", qualified_name, args, kwargs)
        finally:
            self._module_path.pop()

    def _erase_after(self, last_kept: Node) -> None:
        graph = self.graph
        doomed: list[Node] = []
        node = last_kept._next
        while node is not graph._root:
            doomed.append(node)
            node = node._next
        for node in reversed(doomed):  # users come later, so they are already gone
            graph.erase_node(node)


def trace_collecting_issues(
    root: torch.nn.Module | Callable[..., Any],
    concrete_args: dict[str, Any] | None = None,
    *,
    leaf_modules: tuple[str, ...] = (),
    autowrap_functions: tuple[Callable[..., Any], ...] = (),
    max_issues: int = 100,
    max_retraces: int = 24,
    time_budget: float = 5.0,
) -> CollectedTrace:
    """Trace ``root`` and return the graph with every issue found along the way; where a
    stand-in made the code raise, search other stand-ins (the module docstring)."""
    search = _Search(root, _TraceOptions(leaf_modules, autowrap_functions, max_issues),
                     _Fixes(dict(concrete_args or {})))
    started = time.perf_counter()
    first = search.attempt({})
    # the search costs whole traces: at most ``max_retraces`` and ``time_budget`` seconds
    # (but never less than four traces' time)
    deadline = started + max(time_budget, 4 * (time.perf_counter() - started))
    return search.improve(first, _Budget(max_retraces, deadline))


@dataclass(frozen=True)
class _TraceOptions:
    """How every trace of a search traces (``trace_collecting_issues``'s arguments)."""

    leaf_modules: tuple[str, ...]
    autowrap_functions: tuple[Callable[..., Any], ...]
    max_issues: int


@dataclass
class _Fixes:
    """What a trace of the search starts from beyond its stand-ins: the fixes that earlier
    traces of the search found and kept."""

    #: the user's concrete_args and the parameters defaulting to None made None
    concrete: dict[str, Any]
    #: issues of an earlier trace this one was fixed past (each trace reports them)
    carried: list[TraceIssue] = field(default_factory=list)
    #: lines whose sizes are static (fxcore._static_sizes) -> the exception raised there
    static: dict[tuple[str, int], TraceIssue] = field(default_factory=dict)
    #: statements where isinstance sees a tensor (fxcore._tensor_checks) -> their exception
    tensor: dict[tuple[str, range], TraceIssue] = field(default_factory=dict)


@dataclass
class _Budget:
    """What the search may spend: whole traces, ``max_retraces`` and until ``deadline``."""

    max_retraces: int
    deadline: float
    spent: int = 0

    def has_retraces(self) -> bool:
        return self.spent < self.max_retraces

    def allows(self) -> bool:
        return self.has_retraces() and time.perf_counter() <= self.deadline

    def spend(self) -> None:
        self.spent += 1


#: a trace and the tracer that made it (its decisions, none_defaults, raised_again)
_Attempt = tuple[CollectedTrace, RecoveringTracer]


class _Search:
    """The traces of one ``trace_collecting_issues`` call (the module docstring's search):
    each step proposes one retrace of the best trace so far, kept if it gets further."""

    def __init__(
        self, root: torch.nn.Module | Callable[..., Any], options: _TraceOptions, fixes: _Fixes
    ) -> None:
        self.root = root
        self.options = options
        self.fixes = fixes
        #: refusals met by every trace of the search before its first follow-on: sites
        #: torch.fx stops at when the code goes the way that trace's stand-ins took it
        self.met: dict[tuple[IssueKind, SourceSpan | None], TraceIssue] = {}
        #: (decision, value) pairs already traced
        self.tried: set[tuple[_DecisionKey, Any]] = set()
        # a forward that assigns to its module (AnchorGenerator's `self.cell_anchors = ...`)
        # leaves a trace's Proxies there: every trace starts from the module as it was; the
        # last one's writes stay, as one torch.fx trace's would (`self.calls += 1`)
        self._pristine = snapshot(root)
        self._traced_once = False

    def attempt(self, choices: dict[_DecisionKey, Any]) -> _Attempt:
        """One trace with these stand-in choices and the search's fixes."""
        if self._traced_once:
            restore(self._pristine)
        self._traced_once = True
        trace, tracer = _trace_once(self.root, self.options, self.fixes, choices)
        first = _first_follow_on(trace)
        for issue in trace.issues[:first]:
            if issue.kind is not IssueKind.EXCEPTION:
                self.met.setdefault((issue.kind, issue.span), issue)
        return trace, tracer

    def improve(self, best: _Attempt, budget: _Budget) -> CollectedTrace:
        """Retrace from ``best`` while a step gets further and the budget lasts."""
        none_check_tried = False
        while budget.has_retraces():
            step = self._with_none_defaults(best, budget)
            if step is None and not none_check_tried and budget.allows():
                none_check_tried = True
                step = self._past_a_none_check(best, budget)
            if step is None:
                failure = _first_follow_on(best[0])
                if failure is None:
                    break
                step = self._other_decision(best, failure, budget)
                if step is None and budget.allows():
                    step = self._past_the_failing_line(best, best[0].issues[failure], budget)
            if step is None:
                break
            best = step
        trace = best[0]
        if budget.spent:
            # a branch the best trace did not take can hold stops too (`boxes.numel() > 4000`
            # decides between two NMS paths): report them with the best trace's issues
            have = {(issue.kind, issue.span) for issue in trace.issues}
            trace.issues.extend(issue for key, issue in self.met.items() if key not in have)
        return trace

    def _with_none_defaults(self, best: _Attempt, budget: _Budget) -> _Attempt | None:
        """The user's fix for ``for t in targets`` with targets=None: concrete_args None for
        the placeholders defaulting to None that the trace iterated, tested or converted."""
        trace, tracer = best
        nones = {name: issue for name, issue in tracer.none_defaults.items()
                 if name not in self.fixes.concrete}
        if not nones or _first_follow_on(trace) is None or not budget.allows():
            return None
        budget.spend()
        self.fixes.concrete.update(dict.fromkeys(nones))
        self.fixes.carried.extend(nones.values())
        return self.attempt(tracer.stand_ins.carried())

    def _past_a_none_check(self, best: _Attempt, budget: _Budget) -> _Attempt | None:
        """A trace that ended at an exception of its own (no stand-in before it: ``if
        encoder_hidden_states is not None: ... raise``) when parameters defaulting to
        ``None`` are placeholders: traced again with them ``None`` (the exception kept),
        taken if it gets further; else the fixes are left as they were. Not for a
        ``forward`` behind a decorator (Hugging Face's ``*args, **kwargs`` wrappers read the
        parameters themselves)."""
        trace = best[0]
        forward = getattr(self.root, "forward", self.root)
        if not trace.issues or trace.graph is None or hasattr(forward, "__wrapped__"):
            return None
        last = trace.issues[-1]
        if last.kind is not IssueKind.EXCEPTION or last.after_recovery:
            return None
        concrete = self.fixes.concrete
        names = [str(node.target) for node in trace.graph.nodes
                 if node.op == "placeholder" and node.args == (None,)
                 and str(node.target) not in concrete]
        if not names:
            return None
        concrete.update(dict.fromkeys(names))
        self.fixes.carried.append(last)
        candidate = self.attempt({})
        if _score(candidate[0]) < _score(trace):
            budget.spend()
            return candidate
        for name in names:
            del concrete[name]
        self.fixes.carried.pop()
        return None

    def _other_decision(self, best: _Attempt, failure: int, budget: _Budget) -> _Attempt | None:
        """The first trace that gets further with one decision made before the failure
        changed, the most recent decisions first."""
        trace, tracer = best
        before = [d for d in tracer.stand_ins.decisions if d.issues_before <= failure]
        for decision in before[::-1][:4]:
            for value in _ALTERNATIVES[decision.key[0]]:
                if value == decision.value or (decision.key, value) in self.tried:
                    continue
                if not budget.allows():
                    break
                self.tried.add((decision.key, value))
                budget.spend()
                choices = tracer.stand_ins.carried()
                choices[decision.key] = value
                candidate = self.attempt(choices)
                if _score(candidate[0]) < _score(trace):
                    return candidate
        return None

    def _past_the_failing_line(
        self, best: _Attempt, issue: TraceIssue, budget: _Budget
    ) -> _Attempt | None:
        """No decision gets further: make the sizes static where the exception came from,
        else answer the isinstance that chose the branch there."""
        if issue.span is None:
            return None
        line = (issue.span.file, issue.span.line)
        fixed = dataclasses.replace(issue, after_recovery=False)
        static, tensor = self.fixes.static, self.fixes.tensor
        if line not in static and not issue.user_raise:
            static[line] = fixed
            step = self._retrace_fixed(best, line, budget)
            if step is not None:
                return step
            del static[line]
        lines = fix_lines(*line)
        if (lines is None or (line[0], lines) in tensor or not budget.has_retraces()
                or not any("isinstance(" in linecache.getline(line[0], n) for n in lines)):
            return None
        # no size to make static: the check that chose this branch was isinstance
        tensor[(line[0], lines)] = fixed
        step = self._retrace_fixed(best, line, budget)
        if step is None:
            del tensor[(line[0], lines)]
        return step

    def _retrace_fixed(
        self, best: _Attempt, line: tuple[str, int], budget: _Budget
    ) -> _Attempt | None:
        """``best`` traced again with a fix at ``line``: taken if the line does not raise
        again and the trace gets further."""
        budget.spend()
        candidate = self.attempt(best[1].stand_ins.carried())
        if line not in candidate[1].raised_again and _score(candidate[0]) < _score(best[0]):
            return candidate
        return None


def _first_follow_on(trace: CollectedTrace) -> int | None:
    """The index of the first exception that followed a recovered issue, if any."""
    for index, issue in enumerate(trace.issues):
        if issue.kind is IssueKind.EXCEPTION and issue.after_recovery:
            return index
    return None


def _score(trace: CollectedTrace) -> tuple[int, int, int, int]:
    """Lower is better: more sites found before the first exception that followed a
    recovered issue (the trace got further), then fewer such exceptions, then a first one
    that is not a ``raise`` of the model's own (a guard clause the stand-in set off), and
    only then more source lines in the graph (the same sites, but the trace went on further
    before failing: ``torch._assert(len(size) == 2)`` passed). A bigger graph alone is no
    better: more iterations of a loop make more nodes, not more sense (nor more lines)."""
    first = _first_follow_on(trace)
    follow_ons = sum(1 for i in trace.issues
                     if i.kind is IssueKind.EXCEPTION and i.after_recovery)
    guard = int(first is not None and trace.issues[first].user_raise)
    lines = set()
    for node in trace.graph.nodes if trace.graph is not None else ():
        span = node.meta.get("source")
        if span is not None:
            lines.add((span.file, span.line))
    return -(len(trace.issues) + 1 if first is None else first), follow_ons, guard, -len(lines)


def _trace_once(
    root: torch.nn.Module | Callable[..., Any],
    options: _TraceOptions,
    fixes: _Fixes,
    choices: dict[_DecisionKey, Any],
) -> _Attempt:
    tracer = RecoveringTracer(
        leaf_modules=options.leaf_modules, max_issues=options.max_issues,
        autowrap_functions=options.autowrap_functions, choices=choices,
    )
    tracer.tensor_lines = dict(fixes.tensor)
    for issue in fixes.carried:  # issues of an earlier trace this one was fixed past
        tracer._add(issue)
    static = fixes.static

    def made_static(file: str, line: int) -> None:
        issue = static[(file, line)]
        if (issue.kind, issue.span) not in tracer._seen:
            tracer._add(dataclasses.replace(issue, module_path=tracer._module_path[-1]))

    graph: Graph | None = None
    complete = False
    try:
        with static_sizes_at(set(static), made_static):
            graph = tracer.trace(root, fixes.concrete or None)
        complete = True
    except _TooManyIssues:
        graph = getattr(tracer, "graph", None)
    except Exception as error:
        tracer.record_exception(error)
        graph = getattr(tracer, "graph", None)
    try:
        tracer._settle_probes()
    except _TooManyIssues:
        pass
    if graph is not None and not complete:
        try:
            graph.output(None)
        except Exception:
            graph = None
    graph_module = None
    codegen_error = None
    if graph is not None:
        name = type(root).__name__ if isinstance(root, torch.nn.Module) else root.__name__
        try:
            graph_module = GraphModule(tracer.root, graph, name)
        except Exception as error:
            codegen_error = error
    return CollectedTrace(
        graph,
        graph_module,
        tracer.issues,
        partial=not complete or bool(tracer.issues),
        opaque_modules=tracer.opaque_modules,
        codegen_error=codegen_error,
    ), tracer
