"""``wrap()`` and what it registers: the global functions and methods a trace keeps as one node.

The tracer patches what is registered here for the duration of a trace; code generation
emits ``wrap("name")`` lines calling this ``wrap``. Both read it from this leaf module, so
the graph needs nothing from the tracer above it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["wrap"]

#: (id of a module's globals, function name) -> those globals; filled by ``wrap()``
_wrapped_fns_to_patch: dict[tuple[int, str], dict[str, Any]] = {}
#: (class, method name): calls of these methods on traced values become call_method nodes
_wrapped_methods_to_patch: list[tuple[type, str]] = []
if os.environ.get("FX_PATCH_GETITEM") == "1":
    # torch.Tensor.__getitem__ on a constant tensor with a traced index (pytorch#50710)
    _wrapped_methods_to_patch.append((torch.Tensor, "__getitem__"))


def wrap(fn_or_name: str | Callable[..., Any]) -> Any:
    """Called at module top level: calls to this global function become single nodes."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError(
            "Unsupported type for global function! Must be either a callable or string name"
        )
    fn_name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    caller = inspect.currentframe()
    caller = caller.f_back if caller is not None else None
    if caller is None or caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), fn_name)] = caller.f_globals
    return fn_or_name
