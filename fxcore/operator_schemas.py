"""Signatures of torch operators, and calls matched to them (torch.fx.operator_schemas' API).

A torch builtin (``torch.add``) has no Python signature; its overloads are TorchScript
schemas. ``get_signature_for_torch_op`` turns each schema into an ``inspect.Signature``
named the way Python callers name the arguments (``self`` is ``input``), and
``normalize_function`` / ``normalize_module`` bind a call's args and kwargs to the one
signature that accepts them, giving back every argument by position or by name.
"""

from __future__ import annotations

import enum
import inspect
import numbers
import re
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch._jit_internal import boolean_dispatched
from torch._ops import OpOverload, OpOverloadPacket

__all__ = [
    "ArgsKwargsPair",
    "binds",
    "check_for_mutable_operation",
    "create_type_hint",
    "get_signature_for_torch_op",
    "normalize_function",
    "normalize_module",
    "type_matches",
]


class ArgsKwargsPair(NamedTuple):
    """A call's arguments, split into the positional and the named ones."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]


_Parameter = inspect.Parameter

# Names TorchScript annotation strings use, as Python objects (for ``eval``).
_ANNOTATION_NAMES: dict[str, Any] = {
    **{name: getattr(typing, name) for name in ("Any", "Dict", "List", "Optional", "Tuple")},
    "Union": typing.Union,
    **{t.__name__: t for t in (int, float, bool, str, complex)},
    "Tensor": torch.Tensor,
    "Device": torch.device,
    "Layout": torch.layout,
    "Generator": torch.Generator,
    "Stream": torch.Stream,
    "Storage": torch.UntypedStorage,
    "QScheme": torch.qscheme,
    "Future": torch.jit.Future,
    "number": numbers.Number,
    "NoneType": type(None),
    "AnyEnumType": enum.Enum,
    "AnyClassType": Any,
    "RRef": Any,
    "Await": Any,
    "t": typing.TypeVar("t"),
    "t1": typing.TypeVar("t1"),
    "t2": typing.TypeVar("t2"),
    "tVal": typing.TypeVar("tVal"),
}
_SCRIPT_CLASS = re.compile(r"__torch__(\.\w+)+")

# Ops whose schemas do not say how Python calls them.
_OVERRIDES: dict[Callable[..., Any], list[inspect.Signature]] = {
    torch.nonzero: [
        inspect.Signature([_Parameter("input", _Parameter.POSITIONAL_OR_KEYWORD)]),
        inspect.Signature(
            [
                _Parameter("input", _Parameter.POSITIONAL_OR_KEYWORD),
                _Parameter("as_tuple", _Parameter.KEYWORD_ONLY, annotation=bool),
            ]
        ),
    ]
}

_signatures: dict[tuple[str, str], inspect.Signature] = {}


def _python_type(script_type: Any) -> Any:
    text = _SCRIPT_CLASS.sub("Any", script_type.annotation_str)
    try:
        return eval(text, {"__builtins__": {}, **_ANNOTATION_NAMES})
    except Exception:  # an annotation this table does not know: keep the signature, lose the type
        return Any


def _signature_of_schema(schema: torch._C.FunctionSchema) -> inspect.Signature:
    key = (schema.name, schema.overload_name)
    cached = _signatures.get(key)
    if cached is None:
        cached = _signatures[key] = _build_signature(schema)
    return cached


def _build_signature(schema: torch._C.FunctionSchema) -> inspect.Signature:
    parameters: list[inspect.Parameter] = []
    for argument in schema.arguments:
        # Python's argument parser calls the first tensor ``input`` where schemas say ``self``.
        name = "input" if argument.name == "self" else argument.name
        if argument.kwarg_only:
            kind = _Parameter.KEYWORD_ONLY
        elif name == "from":  # a Python keyword: only by position, and so are those before it
            kind = _Parameter.POSITIONAL_ONLY
            parameters = [p.replace(kind=_Parameter.POSITIONAL_ONLY) for p in parameters]
        else:
            kind = _Parameter.POSITIONAL_OR_KEYWORD
        default = argument.default_value if argument.has_default_value() else _Parameter.empty
        parameters.append(
            _Parameter(name, kind, default=default, annotation=_python_type(argument.type))
        )
    returns = [_python_type(result.type) for result in schema.returns]
    return_annotation: Any = (
        None if not returns else returns[0] if len(returns) == 1 else tuple(returns)
    )
    try:
        return inspect.Signature(parameters, return_annotation=return_annotation)
    except ValueError:  # a defaulted argument before a required one: the defaults bind last
        return inspect.Signature(
            [p.replace(default=_Parameter.empty) for p in parameters],
            return_annotation=return_annotation,
        )


def _schemas_of(op: Callable[..., Any]) -> list[torch._C.FunctionSchema] | None:
    if isinstance(op, OpOverload):
        return [op._schema]
    if isinstance(op, OpOverloadPacket):
        return [overload._schema for overload in op.op_overloads()]
    builtin = torch.jit._builtins._find_builtin(op)
    if builtin is None:
        return None
    return list(torch._C._jit_get_schemas_for_operator(builtin))


@typing.overload
def get_signature_for_torch_op(
    op: Callable[..., Any], return_schemas: typing.Literal[False] = ...
) -> list[inspect.Signature] | None: ...


@typing.overload
def get_signature_for_torch_op(
    op: Callable[..., Any], return_schemas: typing.Literal[True]
) -> tuple[list[inspect.Signature] | None, list[torch._C.FunctionSchema] | None]: ...


def get_signature_for_torch_op(op: Callable[..., Any], return_schemas: bool = False) -> Any:
    """One ``inspect.Signature`` per overload of a torch operator, or ``None`` for a callable
    that is not one. With ``return_schemas``, also the TorchScript schemas they came from."""
    override = _OVERRIDES.get(op) if not isinstance(op, (OpOverload, OpOverloadPacket)) else None
    if override is not None:
        return (override, None) if return_schemas else override
    try:
        schemas = _schemas_of(op)
    except TypeError:  # unhashable or otherwise not an operator
        schemas = None
    if schemas is None:
        return (None, None) if return_schemas else None
    signatures = [_signature_of_schema(schema) for schema in schemas]
    return (signatures, schemas) if return_schemas else signatures


def create_type_hint(x: object) -> object:
    """A type hint for a list or tuple of argument types (``List[T]`` / ``Tuple[T, ...]`` with
    ``T`` their common base, ``Any`` if they share none); anything else comes back as is."""
    if not isinstance(x, (list, tuple)):
        return x
    try:
        if not x:
            common: Any = Any
        else:
            common = x[0]
            for element_type in x:
                if issubclass(element_type, common):
                    continue
                if issubclass(common, element_type):
                    common = element_type
                else:
                    common = Any
                    break
    except Exception:
        warnings.warn(
            f"We were not able to successfully create type hint from the type {x}", stacklevel=2
        )
        return x
    return list[common] if isinstance(x, list) else tuple[common, ...]  # type: ignore[valid-type]


def _origin(t: Any) -> Any:
    return getattr(t, "__origin__", None)


def _is_union(t: Any) -> bool:
    return _origin(t) is typing.Union or isinstance(t, types.UnionType)


def type_matches(signature_type: Any, argument_type: Any) -> bool:
    """Whether an argument of type ``argument_type`` is accepted by a parameter annotated
    ``signature_type`` the way torch's argument parser accepts it (an ``int`` for
    ``List[int]``, a tuple for a list, a dtype for an ``int``, an int or float for a number)."""
    if signature_type is argument_type:
        return True
    if _is_union(signature_type):
        return any(type_matches(member, argument_type) for member in signature_type.__args__)
    if _origin(signature_type) is list:
        return _list_parameter_accepts(signature_type.__args__[0], argument_type)
    if signature_type is int and argument_type is torch.dtype:
        return True
    if signature_type is numbers.Number and argument_type in (int, float):
        return True
    if inspect.isclass(argument_type) and inspect.isclass(signature_type):
        return issubclass(argument_type, signature_type)
    return False


def _list_parameter_accepts(element_type: Any, argument_type: Any) -> bool:
    if element_type is int and argument_type is int:
        return True
    if not inspect.isclass(element_type):
        warnings.warn(
            f"Does not support nested parametric types, got List[{element_type}]. "
            "Please file a bug.",
            stacklevel=3,
        )
        return False
    if _origin(argument_type) is list:
        return issubclass(argument_type.__args__[0], element_type)
    if _origin(argument_type) is not tuple:
        return False
    members = argument_type.__args__
    if members == ((),):
        return True
    return all(m is Ellipsis or issubclass(m, element_type) for m in members)


def _bind_to(
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    only_kwargs: bool,
) -> ArgsKwargsPair | None:
    kinds = [p.kind for p in signature.parameters.values()]
    plain = all(k in (_Parameter.POSITIONAL_OR_KEYWORD, _Parameter.KEYWORD_ONLY) for k in kinds)
    # random_/uniform_-like schemas take ``from`` by position only yet are called with names
    if not plain and list(signature.parameters) != ["input", "from", "to", "generator"]:
        return None
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    new_args: list[Any] = []
    new_kwargs: dict[str, Any] = {}
    for index, name in enumerate(signature.parameters):
        if not only_kwargs and index < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


def normalize_function(
    target: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    arg_types: tuple[Any, ...] | None = None,
    kwarg_types: dict[str, Any] | None = None,
    normalize_to_only_use_kwargs: bool = False,
) -> ArgsKwargsPair | None:
    """``target(*args, **kwargs)`` with its arguments matched to ``target``'s signature: the
    positional ones stay positional (all become named with ``normalize_to_only_use_kwargs``),
    defaults filled in. ``None`` when no signature accepts them; a torch operator whose
    overloads accept them ambiguously needs ``arg_types``/``kwarg_types`` to choose."""
    kwargs = {} if kwargs is None else kwargs
    is_operator = isinstance(target, (types.BuiltinFunctionType, OpOverload, OpOverloadPacket))
    if not is_operator and hasattr(target, "_op"):
        target = target._op
        is_operator = isinstance(target, (types.BuiltinFunctionType, OpOverload, OpOverloadPacket))
    if not is_operator:
        analysed = target
        if target in boolean_dispatched:
            branches = boolean_dispatched[target]
            if_true, if_false = branches["if_true"], branches["if_false"]
            if inspect.signature(if_true).parameters != inspect.signature(if_false).parameters:
                return None
            analysed = if_true
        signature = inspect.signature(inspect.unwrap(analysed))
        return _bind_to(signature, args, kwargs, normalize_to_only_use_kwargs)
    return _normalize_operator_call(
        target, args, kwargs, arg_types, kwarg_types, normalize_to_only_use_kwargs
    )


def _normalize_operator_call(
    target: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    arg_types: tuple[Any, ...] | None,
    kwarg_types: dict[str, Any] | None,
    only_kwargs: bool,
) -> ArgsKwargsPair | None:
    signatures = get_signature_for_torch_op(target) or []
    matching = [s for s in signatures if binds(s, args, kwargs)]
    if len(matching) == 1:
        return _bind_to(matching[0], args, kwargs, only_kwargs)
    if not matching:
        return None
    if arg_types is None and kwarg_types is None:
        listing = "\n".join(str(s) for s in matching)
        raise RuntimeError(
            f"Tried to normalize arguments to {torch.typename(target)} but the schema match was "
            "ambiguous! Please provide argument types to the normalize_arguments() call. "
            f"Available schemas:\n{listing}"
        )
    for signature in signatures:
        if _types_match(signature, arg_types or (), kwarg_types or {}):
            return _bind_to(signature, args, kwargs, only_kwargs)
    return None


def binds(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a call with ``args`` and ``kwargs`` binds to ``signature``."""
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def _types_match(
    signature: inspect.Signature, arg_types: tuple[Any, ...], kwarg_types: dict[str, Any]
) -> bool:
    try:
        bound = signature.bind(*arg_types, **kwarg_types)
    except TypeError:
        return False
    return all(
        type_matches(signature.parameters[name].annotation, given)
        for name, given in bound.arguments.items()
    )


def normalize_module(
    root: torch.nn.Module,
    target: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    normalize_to_only_use_kwargs: bool = False,
) -> ArgsKwargsPair | None:
    """A call of ``root``'s submodule ``target`` with its arguments matched to the submodule's
    ``forward``; only torch.nn's own module classes are normalized (``None`` otherwise)."""
    try:
        submodule = root.get_submodule(target)
    except AttributeError as error:
        raise RuntimeError(
            f"Tried to normalize node with target {target} but root did not have that target!"
        ) from error
    cls = type(submodule)
    if getattr(torch.nn, cls.__name__, None) is not cls:
        return None
    signature = inspect.signature(inspect.unwrap(submodule.forward))
    return _bind_to(signature, args, kwargs or {}, normalize_to_only_use_kwargs)


def check_for_mutable_operation(
    target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Raise if the one overload of ``target`` these arguments select writes to an argument
    (``torch.sigmoid(x, out=y)``); an ambiguous or absent match passes."""
    signatures, schemas = get_signature_for_torch_op(target, return_schemas=True)
    if not signatures or not schemas:
        return
    matched = [
        schema
        for signature, schema in zip(signatures, schemas, strict=True)
        if binds(signature, args, kwargs)
    ]
    if len(matched) == 1 and matched[0].is_mutable:
        raise RuntimeError(
            f"Tried to trace mutable operation {matched[0]}. FX only supports functional "
            "code, so operations that mutate operands in-place (e.g. via `out` arguments) "
            "are not supported"
        )
