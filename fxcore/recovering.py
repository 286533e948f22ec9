"""A trace that reports every untraceable construct instead of stopping at the first.

``trace_collecting_issues`` traces like ``symbolic_trace`` but, where torch.fx would raise,
it records a :class:`TraceIssue` at the user expression responsible and carries on with a
stand-in value:

- a traced value used as a condition is True the first time a code position asks and False
  afterwards, so ``if`` takes one branch and every loop ends;
- iterating a traced value yields one element (``x[0]``);
- ``len``/``int``/``index`` of a traced value give 1 and ``float`` 1.0;
- an exception inside a submodule's ``forward`` makes that submodule an opaque
  ``call_module`` node (its partial nodes are removed) and tracing continues in the caller;
  an exception in the root ends the trace with the graph built so far.
"""

from __future__ import annotations

import enum
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore._symbolic_trace import Tracer
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


@dataclass
class CollectedTrace:
    graph: Graph | None
    graph_module: GraphModule | None
    issues: list[TraceIssue] = field(default_factory=list)
    partial: bool = False
    #: node names of submodules that failed and were kept as opaque call_module nodes
    opaque_modules: list[str] = field(default_factory=list)


class _TooManyIssues(Exception):
    pass


def _user_frame(start: types.FrameType | None) -> types.FrameType | None:
    frame = start
    depth = 0
    while frame is not None and depth < 64:
        if not is_internal_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
        depth += 1
    return None


class _RecoveringProxy(Proxy):
    def __int__(self) -> int:
        return self.tracer.python_value(self, "int", 1)  # type: ignore[attr-defined]

    def __float__(self) -> float:
        return self.tracer.python_value(self, "float", 1.0)  # type: ignore[attr-defined]

    def __index__(self) -> int:
        return self.tracer.python_value(self, "index", 1)  # type: ignore[attr-defined]


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
        **tracer_kwargs: Any,
    ) -> None:
        super().__init__(**tracer_kwargs)
        self.issues: list[TraceIssue] = []
        self.opaque_modules: list[str] = []
        self._leaf_names = set(leaf_modules)
        self._max_issues = max_issues
        self._visits: dict[tuple[types.CodeType, int], int] = {}
        self._seen: set[tuple[IssueKind, SourceSpan | None]] = set()
        self._module_path: list[str] = [""]

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
        return _RecoveringProxy(node, self)

    # -- recording -----------------------------------------------------------------------
    def _record(
        self, kind: IssueKind, message: str, frame: types.FrameType | None, **extra: Any
    ) -> None:
        span = span_of_frame(frame) if frame is not None else None
        key = (kind, span)
        if key in self._seen:
            return
        self._seen.add(key)
        stack = user_stack(frame) if frame is not None else ()
        self.issues.append(
            TraceIssue(kind, message, span, stack, module_path=self._module_path[-1], **extra)
        )
        if len(self.issues) >= self._max_issues:
            raise _TooManyIssues

    def to_bool(self, obj: Proxy) -> bool:
        frame = _user_frame(sys._getframe(1))
        obj.node.meta["consumed_by_issue"] = IssueKind.CONTROL_FLOW.value
        self._record(
            IssueKind.CONTROL_FLOW,
            "symbolically traced variables cannot be used as inputs to control flow",
            frame,
        )
        if frame is None:
            return False
        key = (frame.f_code, frame.f_lasti)
        visits = self._visits.get(key, 0)
        self._visits[key] = visits + 1
        return visits == 0

    def iter(self, obj: Proxy) -> Iterator[Any]:
        frame = _user_frame(sys._getframe(1))
        self._record(IssueKind.ITERATION, "Proxy object cannot be iterated", frame)
        return iter([obj[0]])

    def length(self, obj: Proxy) -> int:
        return self.python_value(obj, "len", 1)

    def python_value(self, obj: Proxy, conversion: str, stand_in: Any) -> Any:
        frame = _user_frame(sys._getframe(1))
        obj.node.meta["consumed_by_issue"] = IssueKind.PYTHON_VALUE.value
        self._record(
            IssueKind.PYTHON_VALUE, _CONVERSION_MESSAGES[conversion], frame, conversion=conversion
        )
        return stand_in

    def record_exception(self, error: BaseException) -> None:
        spans = spans_of_traceback(error.__traceback__)
        span = spans[-1] if spans else None
        if span is not None and (IssueKind.EXCEPTION, span) in self._seen:
            return
        self._seen.add((IssueKind.EXCEPTION, span))
        outer = user_stack(sys._getframe(1))
        self.issues.append(
            TraceIssue(
                IssueKind.EXCEPTION,
                f"{type(error).__name__}: {error}",
                span,
                outer + spans,
                exception_type=type(error).__name__,
                after_recovery=any(i.kind is not IssueKind.EXCEPTION for i in self.issues),
                module_path=self._module_path[-1],
            )
        )

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
) -> CollectedTrace:
    """Trace ``root`` and return the graph with every issue found along the way."""
    tracer = RecoveringTracer(
        leaf_modules=leaf_modules, max_issues=max_issues, autowrap_functions=autowrap_functions
    )
    graph: Graph | None = None
    complete = False
    try:
        graph = tracer.trace(root, concrete_args)
        complete = True
    except _TooManyIssues:
        graph = getattr(tracer, "graph", None)
    except Exception as error:
        tracer.record_exception(error)
        graph = getattr(tracer, "graph", None)
    if graph is not None and not complete:
        try:
            graph.output(None)
        except Exception:
            graph = None
    graph_module = None
    if graph is not None:
        name = type(root).__name__ if isinstance(root, torch.nn.Module) else root.__name__
        try:
            graph_module = GraphModule(tracer.root, graph, name)
        except Exception:
            graph_module = None
    return CollectedTrace(
        graph,
        graph_module,
        tracer.issues,
        partial=not complete or bool(tracer.issues),
        opaque_modules=tracer.opaque_modules,
    )
