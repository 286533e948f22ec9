"""Structured inputs for generated code: ``forward(self, x, d)`` where ``d`` is a dict.

When ``concrete_args`` puts placeholders inside containers (``{"a": PH, "b": [PH]}``), the
graph's inputs are the containers' leaves. Generated code then unpacks its arguments with
``fx_pytree.tree_flatten_spec(...)`` (this module, as the global ``fx_pytree``) and packs
its result with ``pytree.tree_unflatten(..., self._out_spec)`` (torch's pytree).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any, NamedTuple

import torch.utils._pytree as pytree

__all__ = ["PyTreeInfo", "tree_flatten_spec", "is_args_kwargs_spec", "register_pytree_flatten_spec"]

#: a container type -> its children for a spec, (value, spec) -> list (torch.fx's SUPPORTED_NODES)
_FLATTEN_SPEC_FNS: dict[type, Callable[[Any, Any], list[Any]]] = {}
#: a container type -> whether a value matches a spec exactly (optional, as in torch.fx)
_FLATTEN_SPEC_EXACT_MATCH_FNS: dict[type, Callable[[Any, Any], bool]] = {}


def register_pytree_flatten_spec(
    cls: type[Any],
    flatten_fn_spec: Callable[[Any, Any], list[Any]],
    flatten_fn_exact_match_spec: Callable[[Any, Any], bool] | None = None,
) -> None:
    """How generated code unpacks an argument of type ``cls``: ``flatten_fn_spec(value,
    spec)`` gives its children in the order of ``spec``'s children."""
    _FLATTEN_SPEC_FNS[cls] = flatten_fn_spec
    if flatten_fn_exact_match_spec is not None:
        _FLATTEN_SPEC_EXACT_MATCH_FNS[cls] = flatten_fn_exact_match_spec


class PyTreeInfo(NamedTuple):
    orig_args: list[str]  # the traced function's parameter names ("self" first for modules)
    in_spec: Any  # TreeSpec of the arguments
    out_spec: Any | None  # TreeSpec of the result, known once the trace has returned


def _children(value: Any, spec: Any) -> list[Any] | None:
    """``value``'s children in ``spec``'s order, for the containers generated code sees."""
    kind = spec.type
    registered = _FLATTEN_SPEC_FNS.get(kind)
    if registered is not None:
        return list(registered(value, spec))
    if kind is dict or kind is collections.OrderedDict:
        return [value[key] for key in spec.context]
    if kind in (list, tuple) or (isinstance(kind, type) and issubclass(kind, tuple)):
        return [value[i] for i in range(spec.num_children)]
    if kind is collections.namedtuple:  # pytree's spec type for every NamedTuple class
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
