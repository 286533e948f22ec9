"""Values for a pass's arguments besides the graph, found the way model inputs are: from the
file's own calls of the pass first (their arguments evaluated in the module's namespace),
then the parameters' defaults, then simple values their annotations ask for
(``config: SurgeryConfig`` -> ``SurgeryConfig()``, ``scale: float`` -> ``1.0``)."""

from __future__ import annotations

import ast
import builtins
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fxls.analysis.passes.parameters import resolve

#: positional values and keyword values, made afresh for each run (a pass may change them)
Arguments = tuple[tuple[Any, ...], dict[str, Any]]

_SIMPLE: dict[Any, Callable[[], Any]] = {bool: lambda: False, int: lambda: 1,
                                         float: lambda: 1.0, str: lambda: "", list: list,
                                         tuple: tuple, dict: dict, set: set}


@dataclass(slots=True)
class PassOptions:
    make: Callable[[], Arguments]
    #: every other argument came from one of the file's calls of the pass
    from_call: bool
    #: required parameters no value was found for: the pass is not run
    missing: tuple[str, ...] = ()


def options_for(definition: ast.FunctionDef, skip: int, calls: list[ast.Call],
                namespace: dict[str, Any], filename: str,
                skip_in_calls: int | None = None) -> PassOptions:
    """The other arguments of ``definition`` (its first ``skip`` parameters are the object
    and the graph); ``calls``: the file's calls of it, whose first ``skip_in_calls``
    arguments are not options (``skip`` unless said: ``Cls(limit=6.0)`` for ``__init__``
    passes no ``self``)."""
    called = _from_calls(skip if skip_in_calls is None else skip_in_calls, calls, namespace,
                         filename)
    if called is not None:
        return PassOptions(called, from_call=True)
    positional, keyword, missing = [], {}, []
    for parameter, has_default, is_keyword in _parameters(definition.args, skip):
        if has_default:
            continue
        make = _from_annotation(parameter.annotation, namespace)
        if make is None:
            missing.append(parameter.arg)
        elif is_keyword:
            keyword[parameter.arg] = make
        else:
            positional.append(make)
    return PassOptions(lambda: (tuple(m() for m in positional),
                                {k: m() for k, m in keyword.items()}),
                       from_call=False, missing=tuple(missing))


def _parameters(arguments: ast.arguments, skip: int
                ) -> list[tuple[ast.arg, bool, bool]]:
    """(parameter, has a default, keyword-only) for each parameter after the first ``skip``."""
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    found = [(p, i >= first_default, False) for i, p in enumerate(positional) if i >= skip]
    found += [(p, d is not None, True) for p, d in zip(arguments.kwonlyargs,
                                                       arguments.kw_defaults, strict=True)]
    return found


def _from_calls(skip: int, calls: list[ast.Call], namespace: dict[str, Any],
                filename: str) -> Callable[[], Arguments] | None:
    """The other arguments of the first call of the pass in the file whose values all
    evaluate in the module's namespace (a call inside a function uses its locals: skipped)."""
    for node in calls:
        if len(node.args) < skip or any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            continue
        positional = [_compiled(a, filename) for a in node.args[skip:]]
        keyword = {k.arg: _compiled(k.value, filename) for k in node.keywords if k.arg}

        def make(positional=positional, keyword=keyword) -> Arguments:
            return (tuple(eval(code, namespace) for code in positional),
                    {name: eval(code, namespace) for name, code in keyword.items()})

        try:
            make()
        except Exception:
            continue
        return make
    return None


def _compiled(expression: ast.expr, filename: str) -> types.CodeType:
    return compile(ast.Expression(expression), filename, "eval")


def _from_annotation(annotation: ast.expr | None, namespace: dict[str, Any]
                     ) -> Callable[[], Any] | None:
    if annotation is None:
        return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr) and (
            _is_none(annotation.left) or _is_none(annotation.right)):
        return lambda: None  # `X | None`
    if isinstance(annotation, ast.Subscript):
        outer = _resolve_type(annotation.value, namespace)
        if outer is typing.Optional:
            return lambda: None
        outer = typing.get_origin(outer) or outer
        return _SIMPLE.get(outer) if isinstance(outer, type) else None
    value = _resolve_type(annotation, namespace)
    if isinstance(value, type) and value in _SIMPLE:
        return _SIMPLE[value]
    if isinstance(value, type) and _constructible(value):
        return value  # a configuration class whose fields all have defaults
    return None


def _resolve_type(expression: ast.expr, namespace: dict[str, Any]) -> Any:
    value = resolve(expression, namespace)
    if value is None and isinstance(expression, ast.Name):
        return getattr(builtins, expression.id, None)
    return value


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _constructible(cls: type) -> bool:
    try:
        cls()
    except Exception:
        return False
    return True
