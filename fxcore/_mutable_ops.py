"""Refuse calls that mutate their operands (``torch.sigmoid(x, out=y)``) while tracing.

Used when ``Tracer.check_mutable_operations`` is set: the call's arguments are matched
against the operator's TorchScript schemas; if exactly one schema accepts them and that
schema writes to an argument, tracing stops. An ambiguous or absent match lets the call
through (the check is best effort, as in torch.fx).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["refuse_mutable_operation"]

_Schemas = list[tuple[inspect.Signature, Any]]
_schemas_cache: dict[Any, _Schemas] = {}


def _signature_of(schema: Any) -> inspect.Signature:
    parameters = []
    for argument in schema.arguments:
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if argument.kwarg_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        default = None if argument.has_default_value() else inspect.Parameter.empty
        name = "input" if argument.name == "self" else argument.name
        if name == "from":  # a keyword: passed by position only, so are those before it
            kind = inspect.Parameter.POSITIONAL_ONLY
            parameters = [p.replace(kind=kind) for p in parameters]
            name = "from_"
        parameters.append(inspect.Parameter(name, kind, default=default))
    try:
        return inspect.Signature(parameters)
    except ValueError:  # a defaulted argument before a required one: bind positionally only
        return inspect.Signature([p.replace(default=inspect.Parameter.empty) for p in parameters])


def _schemas_of(target: Callable[..., Any]) -> _Schemas:
    if isinstance(target, torch._ops.OpOverload):
        schemas = [target._schema]
    elif isinstance(target, torch._ops.OpOverloadPacket):
        schemas = [getattr(target, name)._schema for name in target.overloads()]
    else:
        builtin = torch.jit._builtins._find_builtin(target)
        if builtin is None:
            return []
        schemas = list(torch._C._jit_get_schemas_for_operator(builtin))
    return [(_signature_of(schema), schema) for schema in schemas]


def _cached_schemas(target: Callable[..., Any]) -> _Schemas:
    try:
        return _schemas_cache[target]
    except KeyError:
        schemas = _schemas_cache[target] = _schemas_of(target)
        return schemas
    except TypeError:  # unhashable callable
        return _schemas_of(target)


def refuse_mutable_operation(
    target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Raise RuntimeError if the one schema matching this call mutates an operand."""
    matched = []
    for signature, schema in _cached_schemas(target):
        try:
            signature.bind(*args, **kwargs)
        except TypeError:
            continue
        matched.append(schema)
    if len(matched) == 1 and matched[0].is_mutable:
        raise RuntimeError(
            f"Tried to trace mutable operation {matched[0]}. FX only supports functional "
            "code, so operations that mutate operands in-place (e.g. via `out` arguments) "
            "are not supported"
        )
