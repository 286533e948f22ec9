"""Find the passes of a file: everything in it that transforms FX graphs.

A pass is found by what it is, not by its name:
- a function whose first parameter is annotated ``GraphModule`` or ``Graph`` (torch.fx's or
  fxcore's), or whose body uses it as one (``gm.graph``, ``graph.nodes``,
  ``replace_pattern(gm, ...)``), or that the file calls with a traced module or graph;
- a function that traces its first parameter (``fx.symbolic_trace(model)``): a
  module-to-module pass such as the tutorial's ``fuse(model)``;
- a ``Transformer`` / ``Interpreter`` subclass, a torch.fx ``PassBase`` subclass;
- a ``PassManager`` bound to a module global.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fxcore.source import SourceSpan


class PassKind(StrEnum):
    GRAPH_MODULE = "graph_module"  # f(gm) -> gm | None
    GRAPH = "graph"  # f(graph) -> graph | None
    MODULE = "module"  # f(model) -> model, traces inside
    TRANSFORMER = "transformer"  # Cls(gm).transform()
    INTERPRETER = "interpreter"  # Cls(gm).run(*inputs)
    PASS_BASE = "pass_base"  # Cls()(gm) -> PassResult
    PASS_MANAGER = "pass_manager"  # pm(gm) -> PassResult


class Flavour(StrEnum):
    TORCH_FX = "torch.fx"
    FXCORE = "fxcore"


@dataclass(slots=True)
class PassSpec:
    name: str
    kind: PassKind
    target: Any
    #: the pass's name where it is defined (a code lens and FX017 go there)
    span: SourceSpan
    flavour: Flavour = Flavour.TORCH_FX
    #: ``return <value>`` statements of a function pass (FX007 and its fix go there)
    returns: list[ast.Return] = field(default_factory=list)
    #: the name of the parameter that holds the graph module (for the recompile fix)
    parameter: str | None = None
    #: it takes options besides the graph (``create_feature_extractor(model,
    #: return_nodes=None)``): run with the graph alone, it may refuse for want of them
    has_options: bool = False


_TRACE_CALLS = {"symbolic_trace"}
_GRAPH_MODULE_CALLS = {"replace_pattern", "replace_pattern_with_filters", "ShapeProp"}
_GRAPH_METHODS = {"inserting_before", "inserting_after", "call_function", "call_method",
                  "call_module", "create_node", "erase_node", "eliminate_dead_code", "nodes",
                  "node_copy", "graph_copy", "find_nodes", "output_node", "placeholder"}


def find_passes(tree: ast.Module, namespace: dict[str, Any], filename: str) -> list[PassSpec]:
    """The passes defined at the top level of ``tree``, resolved in ``namespace``."""
    traced_names = _names_bound_to_traces(tree)
    called = _called_with_graphs(tree, traced_names)
    found: list[PassSpec] = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            spec = _function_pass(statement, namespace, filename, called)
        elif isinstance(statement, ast.ClassDef):
            spec = _class_pass(statement, namespace, filename)
        else:
            spec = None
        if spec is not None:
            found.append(spec)
    found.extend(_pass_managers(tree, namespace, filename))
    return found


def _name_span(filename: str, node: ast.FunctionDef | ast.ClassDef | ast.expr) -> SourceSpan:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        keyword = "def " if isinstance(node, ast.FunctionDef) else "class "
        col = node.col_offset + len(keyword)
        return SourceSpan(filename, node.lineno, node.lineno, col, col + len(node.name.encode()),
                          node.name)
    return SourceSpan(filename, node.lineno, node.end_lineno or node.lineno, node.col_offset,
                      node.end_col_offset or node.col_offset)


def _function_pass(
    definition: ast.FunctionDef, namespace: dict[str, Any], filename: str,
    called: dict[str, PassKind],
) -> PassSpec | None:
    function = namespace.get(definition.name)
    if not callable(function) or not definition.args.args or _needs_more(definition.args):
        return None
    first = definition.args.args[0]
    if _annotated_otherwise(first.annotation, namespace):
        return None  # ``def use_mkl_length(graph: MklSubgraph)``: not an FX graph
    kind, flavour = _annotated_kind(first.annotation, namespace)
    if kind is None or kind is PassKind.MODULE:
        used = _use_of_parameter(definition, first.arg)
        # an nn.Module parameter that is never traced: not a pass
        never_traced = kind is PassKind.MODULE and used is not PassKind.MODULE
        kind = None if never_traced else used or kind
    if kind is None:
        kind = called.get(definition.name)
    if kind is None:
        return None
    if flavour is None:
        flavour = _namespace_flavour(namespace)
    returns = [node for node in _own_nodes(definition)
               if isinstance(node, ast.Return) and node.value is not None]
    return PassSpec(definition.name, kind, function, _name_span(filename, definition), flavour,
                    returns, first.arg, _has_options(definition.args))


def _needs_more(arguments: ast.arguments) -> bool:
    """A function that needs more than one argument is a helper of a pass, not a pass
    (``make_neg(graph, node)``): it cannot be called with a graph alone."""
    positional = [*arguments.posonlyargs, *arguments.args]
    required = len(positional) - len(arguments.defaults)
    missing_keyword = any(d is None for d in arguments.kw_defaults)
    return required > 1 or missing_keyword


def _has_options(arguments: ast.arguments) -> bool:
    return len(arguments.posonlyargs) + len(arguments.args) > 1 or bool(arguments.kwonlyargs)


def _annotated_otherwise(annotation: ast.expr | None, namespace: dict[str, Any]) -> bool:
    """The parameter is annotated with a class that is no graph, graph module or module."""
    if annotation is None:
        return False
    value = _resolve(annotation, namespace)
    return isinstance(value, type) and _annotated_kind(annotation, namespace)[0] is None


def _annotated_kind(
    annotation: ast.expr | None, namespace: dict[str, Any]
) -> tuple[PassKind | None, Flavour | None]:
    if annotation is None:
        return None, None
    value = _resolve(annotation, namespace)
    import torch.fx

    import fxcore

    table = ((torch.fx.GraphModule, PassKind.GRAPH_MODULE, Flavour.TORCH_FX),
             (fxcore.GraphModule, PassKind.GRAPH_MODULE, Flavour.FXCORE),
             (torch.fx.Graph, PassKind.GRAPH, Flavour.TORCH_FX),
             (fxcore.Graph, PassKind.GRAPH, Flavour.FXCORE))
    if isinstance(value, type):
        for cls, kind, flavour in table:
            if value is cls or issubclass(value, cls):
                return kind, flavour
        if issubclass(value, torch.nn.Module):
            return PassKind.MODULE, None
        return None, None
    text = ast.unparse(annotation).strip("'\"")
    last = text.rpartition(".")[2]
    if last == "GraphModule":
        return PassKind.GRAPH_MODULE, None
    if last == "Graph":
        return PassKind.GRAPH, None
    if last == "Module":
        return PassKind.MODULE, None
    return None, None


def _resolve(expression: ast.expr, namespace: dict[str, Any]) -> Any:
    """A dotted name or string annotation's value in ``namespace`` (None if it has none)."""
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        try:
            expression = ast.parse(expression.value, mode="eval").body
        except SyntaxError:
            return None
    parts: list[str] = []
    while isinstance(expression, ast.Attribute):
        parts.append(expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name) or expression.id not in namespace:
        return None
    value = namespace[expression.id]
    for part in reversed(parts):
        value = getattr(value, part, None)
    return value


def _namespace_flavour(namespace: dict[str, Any]) -> Flavour:
    """fxcore when the file uses fxcore's tracer and not torch.fx's."""
    import fxcore

    modules = {getattr(v, "__name__", "") for v in namespace.values() if inspect.ismodule(v)}
    uses_fxcore = any(v is fxcore or v is fxcore.symbolic_trace for v in namespace.values())
    uses_torch_fx = "torch.fx" in modules or any(
        getattr(v, "__module__", "").startswith("torch.fx") for v in namespace.values()
        if callable(v))
    return Flavour.FXCORE if uses_fxcore and not uses_torch_fx else Flavour.TORCH_FX


def _own_nodes(definition: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of a function's body, not of functions or classes nested in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(definition.body)
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _use_of_parameter(definition: ast.FunctionDef, parameter: str) -> PassKind | None:
    """What the body does with ``parameter``: traces it, uses it as a graph module (its
    ``.graph``, ``replace_pattern(it, ...)``) or as a graph (``.nodes``, ``.inserting_*``)."""
    as_graph = False
    for node in _own_nodes(definition):
        if isinstance(node, ast.Call) and node.args and _is_name(node.args[0], parameter):
            if _call_name(node) in _TRACE_CALLS:
                return PassKind.MODULE
            if _call_name(node) in _GRAPH_MODULE_CALLS:
                return PassKind.GRAPH_MODULE
        if isinstance(node, ast.Call) and _call_name(node) == "trace" and node.args and (
                _is_name(node.args[0], parameter)):
            return PassKind.MODULE
        if isinstance(node, ast.Attribute) and _is_name(node.value, parameter):
            if node.attr in ("graph", "recompile"):
                return PassKind.GRAPH_MODULE
            if node.attr in _GRAPH_METHODS:
                as_graph = True
    return PassKind.GRAPH if as_graph else None


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_trace_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        _call_name(node) in _TRACE_CALLS or _call_name(node) == "GraphModule")


def _names_bound_to_traces(tree: ast.Module) -> set[str]:
    """Names the file assigns a traced module to (``gm = fx.symbolic_trace(Net())``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_trace_call(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _is_trace_call(
                node.value) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _called_with_graphs(tree: ast.Module, traced: set[str]) -> dict[str, PassKind]:
    """Functions the file calls with a traced module (or its ``.graph``) as first argument."""
    found: dict[str, PassKind] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        argument = node.args[0]
        if _is_trace_call(argument) or (isinstance(argument, ast.Name) and argument.id in traced):
            found.setdefault(node.func.id, PassKind.GRAPH_MODULE)
        elif isinstance(argument, ast.Attribute) and argument.attr == "graph" and (
                _is_trace_call(argument.value) or (isinstance(argument.value, ast.Name)
                                                   and argument.value.id in traced)):
            found.setdefault(node.func.id, PassKind.GRAPH)
    return found


def _class_pass(definition: ast.ClassDef, namespace: dict[str, Any],
                filename: str) -> PassSpec | None:
    cls = namespace.get(definition.name)
    if not isinstance(cls, type) or inspect.isabstract(cls):
        return None
    import torch.fx
    from torch.fx.passes.infra.pass_base import PassBase

    import fxcore

    table = ((torch.fx.Transformer, PassKind.TRANSFORMER, Flavour.TORCH_FX),
             (fxcore.Transformer, PassKind.TRANSFORMER, Flavour.FXCORE),
             (torch.fx.Interpreter, PassKind.INTERPRETER, Flavour.TORCH_FX),
             (fxcore.Interpreter, PassKind.INTERPRETER, Flavour.FXCORE),
             (PassBase, PassKind.PASS_BASE, Flavour.TORCH_FX))
    for base, kind, flavour in table:
        if issubclass(cls, base):
            return PassSpec(definition.name, kind, cls, _name_span(filename, definition),
                            flavour)
    return None


def _pass_managers(tree: ast.Module, namespace: dict[str, Any],
                   filename: str) -> list[PassSpec]:
    from torch.fx.passes.infra.pass_manager import PassManager

    found = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if isinstance(target, ast.Name) and isinstance(namespace.get(target.id), PassManager):
                found.append(PassSpec(target.id, PassKind.PASS_MANAGER, namespace[target.id],
                                      _name_span(filename, target)))
    return found
