"""Record what runs during a trace but leaves no node: prints, logging, random, time, and
tensors created from scratch (which a graph can only keep as baked constants)."""

from __future__ import annotations

import builtins
import logging
import random
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fxcore.source import SourceSpan, is_internal_file, user_span, user_stack
from fxls.analysis.context import TraceTimeCall

_RANDOM_FUNCTIONS = ("random", "randint", "choice", "uniform", "shuffle", "gauss", "sample")
_TIME_FUNCTIONS = ("time", "perf_counter", "monotonic", "sleep", "process_time")
_LOG_METHODS = ("debug", "info", "warning", "error", "critical", "exception", "log")


class TraceRecorder:
    def __init__(self) -> None:
        self.calls: list[TraceTimeCall] = []
        #: id(tensor) -> span of the user expression that created it during the trace
        self.created_tensors: dict[int, SourceSpan] = {}
        self._keep_alive: list[Any] = []

    def _note(self, what: str) -> None:
        caller = sys._getframe(2)
        if is_internal_file(caller.f_code.co_filename):
            return  # only calls written in user code count
        span = user_span(caller)
        if span is not None:
            self.calls.append(TraceTimeCall(what, span, user_stack(caller)))

    def _wrap_call(self, what: str, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self

        def recorded(*args: Any, **kwargs: Any) -> Any:
            recorder._note(what)
            return original(*args, **kwargs)

        return recorded

    @contextmanager
    def active(self) -> Iterator[TraceRecorder]:
        undo: list[Callable[[], None]] = []

        def patch(owner: Any, name: str, value: Any) -> None:
            original = getattr(owner, name)
            undo.append(lambda: setattr(owner, name, original))
            setattr(owner, name, value)

        patch(builtins, "print", self._wrap_call("print", builtins.print))
        for name in _RANDOM_FUNCTIONS:
            if hasattr(random, name):
                patch(random, name, self._wrap_call(f"random.{name}", getattr(random, name)))
        for name in _TIME_FUNCTIONS:
            if hasattr(time, name):
                patch(time, name, self._wrap_call(f"time.{name}", getattr(time, name)))
        patch(warnings, "warn", self._wrap_call("warnings.warn", warnings.warn))
        for name in _LOG_METHODS:
            patch(logging.Logger, name, self._wrap_call(f"logging.{name}",
                                                        getattr(logging.Logger, name)))
            patch(logging, name, self._wrap_call(f"logging.{name}", getattr(logging, name)))
        try:
            with _CreationMode(self):
                yield self
        finally:
            while undo:
                undo.pop()()


class _CreationMode(TorchFunctionMode):
    """Sees every torch call of the trace; remembers where real tensors were made."""

    def __init__(self, recorder: TraceRecorder) -> None:
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        if isinstance(result, torch.Tensor):
            caller = sys._getframe(1)
            if not is_internal_file(caller.f_code.co_filename):
                span = user_span(caller)
                if span is not None:
                    self.recorder.created_tensors[id(result)] = span
                    self.recorder._keep_alive.append(result)
        return result
