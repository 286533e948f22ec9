"""Structured inputs for generated code: ``forward(self, x, d)`` where ``d`` is a dict.

When ``concrete_args`` puts placeholders inside containers (``{"a": PH, "b": [PH]}``), the
graph's inputs are the containers' leaves. Generated code then unpacks its arguments with
``fx_pytree.tree_flatten_spec(...)`` (this module, as the global ``fx_pytree``) and packs
its result with ``pytree.tree_unflatten(..., self._out_spec)`` (torch's pytree).
"""

from __future__ import annotations

import collections
from typing import Any, NamedTuple

import torch.utils._pytree as pytree

__all__ = ["PyTreeInfo", "tree_flatten_spec", "is_args_kwargs_spec"]


class PyTreeInfo(NamedTuple):
    orig_args: list[str]  # the traced function's parameter names ("self" first for modules)
    in_spec: Any  # TreeSpec of the arguments
    out_spec: Any | None  # TreeSpec of the result, known once the trace has returned


def _children(value: Any, spec: Any) -> list[Any] | None:
    """``value``'s children in ``spec``'s order, for the containers generated code sees."""
    kind = spec.type
    if kind is dict or kind is collections.OrderedDict:
        return [value[key] for key in spec.context]
    if kind in (list, tuple) or (isinstance(kind, type) and issubclass(kind, tuple)):
        return [value[i] for i in range(spec.num_children)]
    return None


def tree_flatten_spec(value: Any, spec: Any) -> list[Any]:
    """The leaves of ``value`` laid out as ``spec`` says (dict entries by the spec's keys)."""
    if spec.is_leaf():
        return [value]
    children = _children(value, spec)
    if children is None:
        leaves, actual = pytree.tree_flatten(value)
        if actual != spec:
            raise RuntimeError(f"{value!r} does not have the expected structure {spec}")
        return leaves
    flat: list[Any] = []
    for child, child_spec in zip(children, spec.children(), strict=True):
        flat.extend(tree_flatten_spec(child, child_spec))
    return flat


def is_args_kwargs_spec(spec: Any) -> bool:
    """A ``(args_tuple, kwargs_dict)`` spec: generated code then rebuilds both."""
    return (
        spec.type is tuple
        and spec.num_children == 2
        and spec.child(0).type is tuple
        and spec.child(1).type is dict
    )
