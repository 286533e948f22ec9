"""Going on past a line that raised because a traced *size* reached code that needs a number.

``batch, channels, h, w = x.shape`` then ``torch.tensor(channels)``: torch.fx raises at that
line (``torch.tensor`` of a Proxy). The user's fix is to make the size static there. The
recovering search retraces with such lines marked: when a marked line starts, the frame's local
variables holding a traced value that is a size (``x.shape``/``x.size()``/``x.dim()``/
``x.numel()``, items of those, arithmetic on them) hold a stand-in number instead, from that
line on, so the code after it is traced too. Tensors are never replaced (the graph would lose
its inputs).

Python 3.11 keeps a frame's fast locals apart from ``f_locals``: the snapshot is written back
with ``PyFrame_LocalsToFast``; on 3.13+ ``f_locals`` writes through and that call is skipped.
"""

from __future__ import annotations

import contextlib
import ctypes
import operator
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from fxcore.node import Node
from fxcore.proxy import Proxy

__all__ = ["is_size", "static_sizes_at"]

_SIZE_ATTRIBUTES = frozenset({"shape"})
_SIZE_METHODS = frozenset({"size", "dim", "numel"})
_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.floordiv,
                         operator.truediv, operator.mod, operator.pow, operator.neg})
_STAND_IN = 1


def is_size(node: Node, depth: int = 0) -> bool:
    """Whether ``node`` computes a size (a shape, an item of it, arithmetic on sizes)."""
    if depth > 32:
        return False
    if node.op == "call_function" and node.target is getattr:
        return len(node.args) > 1 and node.args[1] in _SIZE_ATTRIBUTES
    if node.op == "call_method" and node.target in _SIZE_METHODS:
        return True
    if node.op == "call_function" and node.target is operator.getitem:
        base = node.args[0]
        return isinstance(base, Node) and is_size(base, depth + 1)
    if node.op == "call_function" and node.target in _ARITHMETIC:
        inputs = node.all_input_nodes
        return bool(inputs) and all(is_size(n, depth + 1) for n in inputs)
    return False


def _write_back(frame: types.FrameType) -> None:
    if sys.version_info < (3, 13):
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))


@contextlib.contextmanager
def static_sizes_at(lines: set[tuple[str, int]],
                    on_replace: Callable[[str, int], None]) -> Iterator[None]:
    """While active, at each ``(file, line)`` of ``lines`` the traced sizes in the frame's
    locals become a stand-in number; ``on_replace(file, line)`` is called when one was."""
    if not lines:
        yield
        return
    files = {file for file, _ in lines}

    def local_trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line" and (frame.f_code.co_filename, frame.f_lineno) in lines:
            names = frame.f_locals  # one snapshot: each f_locals access refreshes it
            replaced = False
            for name, value in list(names.items()):
                if isinstance(value, Proxy) and is_size(value.node):
                    names[name] = _STAND_IN
                    replaced = True
            if replaced:
                _write_back(frame)
                on_replace(frame.f_code.co_filename, frame.f_lineno)
        return local_trace

    def global_trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        return local_trace if frame.f_code.co_filename in files else None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield
    finally:
        sys.settrace(previous)
