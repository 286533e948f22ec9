"""Where graph nodes come from: spans of user source read from Python's code positions.

Every node fxcore creates records the exact expression of user code that created it
(``node.meta["source"]``) and the chain of user frames leading there
(``node.meta["source_stack"]``, outermost first). Positions come from
``code.co_positions()`` (Python 3.11+): lines are 1-based and columns are 0-based UTF-8
byte offsets, exactly as the interpreter reports them. Converting to editor units is the
job of the layer that talks to editors, not of fxcore.

"User code" is any frame whose file is not part of fxcore, torch or the standard library.
A walk up the stack stops at a *trace boundary*: the fxcore frame that called the user's
root ``forward``, so a traced node's stack starts at the traced module, not at whoever
called the tracer.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "SourceSpan",
    "is_internal_file",
    "add_internal_path",
    "span_of_frame",
    "user_stack",
    "user_span",
    "spans_of_traceback",
    "trace_boundary",
    "record_source",
    "record_sources",
]

#: Module-level switch: benchmarks turn it off to measure what spans cost.
record_sources: bool = True

_MAX_STACK_DEPTH = 64


@dataclass(frozen=True, slots=True)
class SourceSpan:
    """A region of a source file, in Python code-position units.

    >>> SourceSpan("m.py", 3, 3, 8, 15, "forward").to_dict()["col"]
    8
    """

    file: str
    line: int
    end_line: int
    col: int
    end_col: int
    function: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "end_line": self.end_line,
            "col": self.col,
            "end_col": self.end_col,
            "function": self.function,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceSpan:
        return cls(
            data["file"],
            data["line"],
            data["end_line"],
            data["col"],
            data["end_col"],
            data.get("function", ""),
        )

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def _package_dir(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = __import__(module_name)
        except ImportError:
            return None
    file = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(file)) + os.sep if file else None


def _internal_prefixes() -> tuple[str, ...]:
    prefixes = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    torch_dir = _package_dir("torch")
    if torch_dir:
        prefixes.append(torch_dir)
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            # site-packages lives under stdlib on many layouts; it is user territory.
            prefixes.append(os.path.abspath(path) + os.sep)
    return tuple(dict.fromkeys(prefixes))


_INTERNAL_PREFIXES = _internal_prefixes()
_SITE_PACKAGES_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_internal_by_filename: dict[str, bool] = {}
_positions_by_code: dict[types.CodeType, list[tuple[int | None, ...]]] = {}
_boundary_codes: set[types.CodeType] = set()
_user_files: set[str] = set()


def add_internal_path(path: str) -> None:
    """Treat files under ``path`` as internal too (tools built on fxcore that call user code)."""
    global _INTERNAL_PREFIXES
    prefix = os.path.abspath(path).rstrip(os.sep) + os.sep
    if prefix not in _INTERNAL_PREFIXES:
        _INTERNAL_PREFIXES = (*_INTERNAL_PREFIXES, prefix)
        _internal_by_filename.clear()


def add_user_file(path: str) -> None:
    """Treat ``path`` as user code even where it lies among internal files (a file of
    torch's own, checked where it lives: its frames are where its problems are)."""
    absolute = os.path.abspath(path)
    _user_files.add(absolute)
    for known in [name for name in _internal_by_filename if os.path.abspath(name) == absolute]:
        _internal_by_filename[known] = False


def is_internal_file(filename: str) -> bool:
    """True for files of fxcore, torch, the standard library and synthetic code (``<...>``).

    >>> is_internal_file(__file__)
    True
    """
    known = _internal_by_filename.get(filename)
    if known is not None:
        return known
    internal = _classify(filename)
    _internal_by_filename[filename] = internal
    return internal


def _classify(filename: str) -> bool:
    if _user_files and os.path.abspath(filename) in _user_files:
        return False
    if filename.startswith("<"):
        # <string> from exec() is user code too, but generated forward code (<eval_with_key>)
        # and frozen modules are not.
        return not filename.startswith("<string")
    path = os.path.abspath(filename)
    for prefix in _INTERNAL_PREFIXES:
        if path.startswith(prefix):
            rest = path[len(prefix) - 1 :]
            if any(marker in rest for marker in _SITE_PACKAGES_MARKERS):
                return False  # a library installed under stdlib/site-packages
            return True
    return False


def _positions(code: types.CodeType) -> list[tuple[int | None, ...]]:
    positions = _positions_by_code.get(code)
    if positions is None:
        positions = list(code.co_positions())
        _positions_by_code[code] = positions
    return positions


_span_cache: dict[tuple[types.CodeType, int], SourceSpan | None] = {}


def _span_at(code: types.CodeType, lasti: int) -> SourceSpan | None:
    key = (code, lasti)
    try:
        return _span_cache[key]
    except KeyError:
        pass
    span = _compute_span(code, lasti)
    _span_cache[key] = span
    return span


def _compute_span(code: types.CodeType, lasti: int) -> SourceSpan | None:
    if lasti < 0:
        return None
    positions = _positions(code)
    index = lasti // 2
    if index >= len(positions):
        return None
    line, end_line, col, end_col = positions[index]
    if line is None:
        return None
    return SourceSpan(
        code.co_filename,
        line,
        end_line if end_line is not None else line,
        col if col is not None else 0,
        end_col if end_col is not None else 0,
        code.co_name,
    )


def span_of_frame(frame: types.FrameType) -> SourceSpan | None:
    """The span of the instruction ``frame`` is executing (for a caller: the call)."""
    return _span_at(frame.f_code, frame.f_lasti)


class _OuterCache:
    """The spans above the innermost user frame, from the previous walk.

    Consecutive nodes usually come from the same caller frame, blocked in the same call:
    then every frame above it is unchanged too and its spans can be reused. Holds one
    frame reference at most (released by ``forget_frames``).
    """

    frame: types.FrameType | None = None
    lasti: int = -1
    spans: tuple[SourceSpan, ...] = ()


def forget_frames() -> None:
    _OuterCache.frame = None
    _OuterCache.spans = ()


def user_stack(start_frame: types.FrameType | None = None) -> tuple[SourceSpan, ...]:
    """Spans of the user frames from the trace boundary (or stack top) down to ``start_frame``.

    Outermost first; the last element is the innermost user expression.
    """
    frame = start_frame if start_frame is not None else sys._getframe(1)
    internal = _internal_by_filename
    boundary = _boundary_codes
    innermost: SourceSpan | None = None
    depth = 0
    while frame is not None and depth < _MAX_STACK_DEPTH:  # find the innermost user frame
        code = frame.f_code
        if code in boundary:
            return ()
        flag = internal.get(code.co_filename)
        if flag is None:
            flag = is_internal_file(code.co_filename)
        depth += 1
        if not flag:
            innermost = _span_at(code, frame.f_lasti)
            frame = frame.f_back
            break
        frame = frame.f_back
    else:
        return ()
    if frame is not None and frame is _OuterCache.frame and frame.f_lasti == _OuterCache.lasti:
        outer = _OuterCache.spans
    else:
        caller = frame
        outer = _walk_outer(frame, depth)
        _OuterCache.frame, _OuterCache.spans = caller, outer
        _OuterCache.lasti = caller.f_lasti if caller is not None else -1
    if innermost is None:
        return outer
    return (*outer, innermost)


def _walk_outer(frame: types.FrameType | None, depth: int) -> tuple[SourceSpan, ...]:
    spans: list[SourceSpan] = []
    internal = _internal_by_filename
    boundary = _boundary_codes
    while frame is not None and depth < _MAX_STACK_DEPTH:
        code = frame.f_code
        if code in boundary:
            break
        flag = internal.get(code.co_filename)
        if flag is None:
            flag = is_internal_file(code.co_filename)
        if not flag:
            span = _span_at(code, frame.f_lasti)
            if span is not None:
                spans.append(span)
        frame = frame.f_back
        depth += 1
    spans.reverse()
    return tuple(spans)


def user_span(start_frame: types.FrameType | None = None) -> SourceSpan | None:
    """The innermost user expression being executed on the caller's stack."""
    frame = start_frame if start_frame is not None else sys._getframe(1)
    depth = 0
    while frame is not None and depth < _MAX_STACK_DEPTH:
        code = frame.f_code
        if code in _boundary_codes:
            return None
        if not is_internal_file(code.co_filename):
            return _span_at(code, frame.f_lasti)
        frame = frame.f_back
        depth += 1
    return None


def spans_of_traceback(tb: types.TracebackType | None) -> tuple[SourceSpan, ...]:
    """User frames of a traceback, outermost first; the last is where the error was raised."""
    spans: list[SourceSpan] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not is_internal_file(code.co_filename):
            span = _span_at(code, tb.tb_lasti)
            if span is not None:
                spans.append(span)
        tb = tb.tb_next
    return tuple(spans)


_F = TypeVar("_F", bound=Callable[..., Any])


def trace_boundary(fn: _F) -> _F:
    """Mark ``fn``: stack walks stop at its frames (it is the tracer calling user code)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        _boundary_codes.add(code)
    return fn


def record_source(node: Any) -> None:
    """Store where ``node`` was created: ``meta["source"]`` and ``meta["source_stack"]``.

    Called by ``Graph.create_node`` for every node; a node created with no user frame on
    the stack (e.g. by fxcore itself, outside any trace) records nothing.
    """
    if not record_sources:
        return
    stack = user_stack(sys._getframe(1))
    if stack:
        meta = node.meta
        meta["source"] = stack[-1]
        meta["source_stack"] = stack
