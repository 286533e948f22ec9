"""Passes written as plain classes, Hugging Face optimum's style: a method that takes a
GraphModule or Graph (``transform(self, graph_module)``), usually a ``__call__`` that runs it,
and ``compose(...)`` chaining instances into an object of a class made inside a function.

Such a class runs as ``Cls()(gm)`` (``Cls().transform(gm)`` when no ``__call__`` takes the
graph); an instance bound to a module global, a composed chain included, as ``obj(gm)``.
A method of the file is read from the file's syntax tree (its annotations or its use of the
parameter); a library's only from its annotations (no source is read)."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any

from fxls.analysis.passes.parameters import (
    Flavour,
    PassKind,
    annotated_kind,
    annotated_otherwise,
    use_of_parameter,
)
from fxls.analysis.passes.pass_options import PassOptions, options_for

_GRAPH_KINDS = (PassKind.GRAPH_MODULE, PassKind.GRAPH)


@dataclass(slots=True)
class GraphMethod:
    name: str
    takes: PassKind
    flavour: Flavour | None
    options: PassOptions | None
    #: it takes more than the graph, and fxls made those arguments up (defaults, annotations)
    has_options: bool = False


class Definitions:
    """The file's function definitions (nested ones too) by the first line of their code."""

    def __init__(self, tree: ast.Module, filename: str) -> None:
        self.tree, self.filename = tree, filename
        self._by_line: dict[int, ast.FunctionDef] | None = None  # made at the first lookup

    def of(self, function: Any) -> ast.FunctionDef | None:
        code = getattr(function, "__code__", None)
        if code is None or code.co_filename != self.filename:
            return None
        if self._by_line is None:
            self._by_line = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.FunctionDef):
                    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                    self._by_line[first] = node
        return self._by_line.get(code.co_firstlineno)


def graph_method(cls: type, definitions: Definitions) -> GraphMethod | None:
    """The method a pass object runs by: ``__call__`` when it takes a graph, else the first
    public method (the class's own first) that does and needs nothing else."""
    call = next((vars(k)["__call__"] for k in cls.__mro__ if "__call__" in vars(k)), None)
    if inspect.isfunction(call):
        found = _graph_method("__call__", call, definitions)
        if found is not None:
            return found
    seen: set[str] = set()
    for klass in cls.__mro__[:-1]:
        for name, attr in vars(klass).items():
            if name in seen or name.startswith("_") or not inspect.isfunction(attr):
                continue
            seen.add(name)
            found = _graph_method(name, attr, definitions)
            if found is not None:
                return found
    return None


def _graph_method(name: str, function: Any, definitions: Definitions) -> GraphMethod | None:
    definition = definitions.of(function)
    if definition is None:
        return _annotated_method(name, function)
    positional = [*definition.args.posonlyargs, *definition.args.args]
    if len(positional) < 2:
        return None
    parameter, namespace = positional[1], function.__globals__
    if annotated_otherwise(parameter.annotation, namespace):
        return None
    kind, flavour = annotated_kind(parameter.annotation, namespace)
    if kind is None:
        kind = use_of_parameter(definition, parameter.arg)
    if kind not in _GRAPH_KINDS:
        return None
    options = options_for(definition, 2, [], namespace, definitions.filename)
    if options.missing:
        return None
    has_options = len(positional) > 2 or bool(definition.args.kwonlyargs)
    return GraphMethod(name, kind, flavour, options, has_options)


def _annotated_method(name: str, function: Any) -> GraphMethod | None:
    """A library's method whose graph parameter is annotated, and nothing else required."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    if len(parameters) < 2 or any(p.default is p.empty and p.kind not in (
            p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters[2:]):
        return None
    annotation = parameters[1].annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    last = text.strip("'\"").rpartition(".")[2]
    kinds = {"GraphModule": PassKind.GRAPH_MODULE, "Graph": PassKind.GRAPH}
    return GraphMethod(name, kinds[last], None, None) if last in kinds else None


def constructible(cls: type) -> bool:
    """``cls()`` needs no argument (the signature says so; nothing is built)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in parameters)
