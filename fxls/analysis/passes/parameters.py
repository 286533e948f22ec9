"""What a pass takes, read from its definition: a parameter annotated ``GraphModule``,
``Graph`` or ``nn.Module`` (torch.fx's or fxcore's), or used as one in the body (``gm.graph``,
``graph.nodes``, ``fx.symbolic_trace(model)``). Shared by the discovery of function passes,
of class-based passes and of the values for a pass's other arguments."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class PassKind(StrEnum):
    GRAPH_MODULE = "graph_module"  # f(gm) -> gm | None
    GRAPH = "graph"  # f(graph) -> graph | None
    MODULE = "module"  # f(model) -> model, traces inside
    TRANSFORMER = "transformer"  # Cls(gm).transform()
    INTERPRETER = "interpreter"  # Cls(gm).run(*inputs)
    PASS_BASE = "pass_base"  # Cls()(gm) -> PassResult
    PASS_MANAGER = "pass_manager"  # pm(gm) -> PassResult
    CLASS = "class"  # Cls()(gm) or Cls().transform(gm): a plain class with a graph method
    INSTANCE = "instance"  # obj(gm): a pass object bound to a global (a composed chain)
    EXPORTED_PROGRAM = "exported_program"  # f(ep): a pass over a torch.export ExportedProgram


class Flavour(StrEnum):
    TORCH_FX = "torch.fx"
    FXCORE = "fxcore"


TRACE_CALLS = {"symbolic_trace"}
_GRAPH_MODULE_CALLS = {"replace_pattern", "replace_pattern_with_filters", "ShapeProp"}
_GRAPH_METHODS = {"inserting_before", "inserting_after", "call_function", "call_method",
                  "call_module", "create_node", "erase_node", "eliminate_dead_code", "nodes",
                  "node_copy", "graph_copy", "find_nodes", "output_node", "placeholder"}


def annotated_otherwise(annotation: ast.expr | None, namespace: dict[str, Any]) -> bool:
    """The parameter is annotated with a class that is no graph, graph module or module."""
    if annotation is None:
        return False
    value = resolve(annotation, namespace)
    return isinstance(value, type) and annotated_kind(annotation, namespace)[0] is None


def annotated_kind(
    annotation: ast.expr | None, namespace: dict[str, Any]
) -> tuple[PassKind | None, Flavour | None]:
    if annotation is None:
        return None, None
    value = resolve(annotation, namespace)
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


def resolve(expression: ast.expr, namespace: dict[str, Any]) -> Any:
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


def own_nodes(definition: ast.FunctionDef) -> list[ast.AST]:
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


def call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


#: attributes a graph and a graph module lack and a pattern match has (Inductor's
#: ``Match``: the ``extra_check`` and replacement functions take one, and it has ``nodes``,
#: ``graph`` and ``output_node()`` as a graph does)
_MATCH_ONLY = {"kwargs", "args", "ctx", "replace_by_example", "replace_with_graph",
               "erase_nodes", "output_nodes", "targets"}


def use_of_parameter(definition: ast.FunctionDef, parameter: str) -> PassKind | None:
    """What the body does with ``parameter``: traces it, uses it as a graph module (its
    ``.graph``, ``replace_pattern(it, ...)``) or as a graph (``.nodes``, ``.inserting_*``);
    None for a parameter also used as no graph is (``match.kwargs``)."""
    if any(isinstance(node, ast.Attribute) and is_name(node.value, parameter)
           and node.attr in _MATCH_ONLY for node in own_nodes(definition)):
        return None
    as_graph = False
    for node in own_nodes(definition):
        if isinstance(node, ast.Call) and node.args and is_name(node.args[0], parameter):
            if call_name(node) in TRACE_CALLS:
                return PassKind.MODULE
            if call_name(node) in _GRAPH_MODULE_CALLS:
                return PassKind.GRAPH_MODULE
        if isinstance(node, ast.Call) and call_name(node) == "trace" and node.args and (
                is_name(node.args[0], parameter)):
            return PassKind.MODULE
        if isinstance(node, ast.Attribute) and is_name(node.value, parameter):
            if node.attr in ("graph", "recompile"):
                return PassKind.GRAPH_MODULE
            if node.attr in _GRAPH_METHODS:
                as_graph = True
    return PassKind.GRAPH if as_graph else None


class ExportForm(StrEnum):
    """The form of torch.export's graph a file hands a pass."""

    GRAPH_MODULE = "graph_module"  # ``ep.graph_module``: parameters lifted to inputs
    #: ``ep.run_decompositions().graph_module``: core ATen operators, lifted, the graph
    #: Inductor hands its post-grad passes (``linear`` as ``permute`` + ``addmm``)
    DECOMPOSED = "decomposed"
    MODULE = "module"  # ``ep.module()``: parameters as attributes, the user's inputs
    PROGRAM = "program"  # the ``ExportedProgram`` itself


@dataclass(frozen=True, slots=True)
class ExportUse:
    """How the file uses a pass on export graphs: the form of the graph and what the pass
    is given (a GraphModule, its Graph, or the ExportedProgram)."""

    form: ExportForm
    takes: PassKind
