"""A call node's arguments by parameter name, for hover: ``input=%x, other=2.0``.

Only the arguments the call passes are named (defaults it leaves out are not listed). The
names come from ``Node.normalized_arguments`` (torch operator schemas, torch.nn modules,
Python signatures). A torch operator whose overloads all accept the call is disambiguated
with the argument types the graph knows (a node is a tensor); if that still leaves several
overloads, they are used only when they agree on the names.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import torch

from fxcore.node import Node, _format_arg
from fxcore.operator_schemas import binds, get_signature_for_torch_op, type_matches

__all__ = ["named_arguments"]

NamedArgs = list[tuple[str, str]]


def named_arguments(node: Node, root: torch.nn.Module | None) -> NamedArgs | None:
    """``[(parameter, formatted argument), ...]`` in parameter order, or ``None``."""
    if node.op not in ("call_function", "call_method", "call_module") or not (
        node.args or node.kwargs
    ):
        return None
    if getattr(node.target, "__module__", None) == "_operator":  # a + b: the names say nothing
        return None
    names = _cached_parameter_names(node, root)
    if names is None:
        return None
    if node.op == "call_method" and names[:1] == ["input"]:
        names[0] = "self"  # x.add(y): the tensor the method is called on
    values = dict(zip(names, node.args, strict=False)) | dict(node.kwargs)
    ordered = [*names[: len(node.args)], *(n for n in names if n in node.kwargs)]
    ordered += [n for n in node.kwargs if n not in ordered]
    return [(name, _formatted(values[name])) for name in ordered]


_PLAIN = frozenset({int, float, bool, str, type(None)})


def _formatted(value: Any) -> str:
    """``_format_arg(value)``, with the common cases (a node, a number) done directly."""
    if type(value) is Node:
        return "%" + str(value)
    if type(value) in _PLAIN:
        return str(value)
    return _format_arg(value)


#: (op, root for submodules, target, argument types, keyword names and types) -> names
_names_by_call_shape: dict[tuple[Any, ...], list[str] | None] = {}
_CACHE_LIMIT = 4096


def _cached_parameter_names(node: Node, root: torch.nn.Module | None) -> list[str] | None:
    """The names for this call, computed once per call shape: binding a signature costs far
    more than a hover's worth of time when done for every node of a large graph."""
    # a submodule's target names it within ``root``, so the root is part of the key
    owner = root if node.op == "call_module" else None
    key: tuple[Any, ...] | None = (
        node.op,
        owner,
        node.target,
        tuple(map(type, node.args)),
        tuple(node.kwargs),
        tuple(map(type, node.kwargs.values())),
    )
    try:
        hash(key)
    except TypeError:  # an unhashable target: no cache
        key = None
    if key is not None and key in _names_by_call_shape:
        names = _names_by_call_shape[key]
        return None if names is None else list(names)
    try:
        names = _parameter_names(node, root)
    except Exception:  # a signature that cannot be read or bound is simply not shown
        names = None
    if key is not None:
        if len(_names_by_call_shape) >= _CACHE_LIMIT:
            _names_by_call_shape.clear()
        _names_by_call_shape[key] = None if names is None else list(names)
    return names


def _parameter_names(node: Node, root: torch.nn.Module | None) -> list[str] | None:
    """The parameter names the call's arguments bind to, in the signature's order."""
    if node.op == "call_module":
        return _module_parameter_names(node, root)
    if node.op == "call_method":
        function = getattr(torch, str(node.target), None)
        return _names_agreed(get_signature_for_torch_op(function), node) if function else None
    try:
        pair = node.normalized_arguments(
            root,  # type: ignore[arg-type]  # a call_function needs no root
            arg_types=_argument_types(node),
            normalize_to_only_use_kwargs=True,
        )
    except RuntimeError:
        pair = None
    if pair is not None:
        return list(pair.kwargs)
    signatures = get_signature_for_torch_op(node.target)  # type: ignore[arg-type]
    if signatures is None:
        signatures = [inspect.signature(inspect.unwrap(node.target))]  # type: ignore[arg-type]
    return _names_agreed(signatures, node)


def _module_parameter_names(node: Node, root: torch.nn.Module | None) -> list[str] | None:
    if root is None:
        return None
    pair = node.normalized_arguments(root, normalize_to_only_use_kwargs=True)
    if pair is not None:
        return list(pair.kwargs)
    forward = root.get_submodule(str(node.target)).forward
    return _names_agreed([inspect.signature(inspect.unwrap(forward))], node)


def _argument_types(node: Node) -> tuple[Any, ...]:
    return tuple(torch.Tensor if isinstance(a, Node) else type(a) for a in node.args)


def _names_agreed(signatures: list[inspect.Signature] | None, node: Node) -> list[str] | None:
    """The parameter names, if every signature accepting the call (and its argument types,
    when any does) names its arguments alike."""
    accepting = [s for s in signatures or [] if binds(s, node.args, node.kwargs)]
    typed = [s for s in accepting if _types_accepted(s, node)]
    agreed: list[str] | None = None
    for signature in typed or accepting:
        bound = signature.bind(*node.args, **node.kwargs)
        names = [n for n in signature.parameters if n in bound.arguments]
        if any(
            signature.parameters[n].kind is inspect.Parameter.VAR_POSITIONAL
            or signature.parameters[n].kind is inspect.Parameter.VAR_KEYWORD
            for n in names
        ):
            return None
        if agreed is not None and names != agreed:
            return None
        agreed = names
    return agreed


def _types_accepted(signature: inspect.Signature, node: Node) -> bool:
    kwarg_types = {
        k: torch.Tensor if isinstance(v, Node) else type(v) for k, v in node.kwargs.items()
    }
    bound = signature.bind(*_argument_types(node), **kwarg_types)
    with warnings.catch_warnings():  # "nested parametric types" are simply not a match
        warnings.simplefilter("ignore")
        return all(
            type_matches(signature.parameters[name].annotation, given)
            for name, given in bound.arguments.items()
        )
