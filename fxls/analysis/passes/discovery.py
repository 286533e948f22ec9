"""Find the passes of a file: everything in it that transforms FX graphs.

A pass is found by what it is, not by its name:
- a function whose first parameter is annotated ``GraphModule`` or ``Graph`` (torch.fx's or
  fxcore's), or whose body uses it as one (``gm.graph``, ``graph.nodes``,
  ``replace_pattern(gm, ...)``), or that the file calls with a traced module or graph; not
  one whose parameter is also used as no graph is (``match.kwargs``: Inductor's pattern
  checks take a ``Match``, which has ``nodes`` and ``output_node()`` too);
- a function that traces its first parameter (``fx.symbolic_trace(model)``): a
  module-to-module pass such as the tutorial's ``fuse(model)``;
- a ``Transformer`` / ``Interpreter`` subclass, a torch.fx ``PassBase`` subclass;
- a ``PassManager`` bound to a module global;
- a plain class with a method taking a graph (optimum's ``Transformation``), and such an
  object bound to a module global (a ``compose(...)`` chain);
- a function taking more than the graph, given the other arguments of the file's own call
  of it, the defaults or values its annotations ask for (``pass_options``).
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxcore.source import SourceSpan
from fxls.analysis.passes.class_passes import Definitions, constructible, graph_method
from fxls.analysis.passes.parameters import (
    TRACE_CALLS,
    ExportUse,
    Flavour,
    PassKind,
    annotated_kind,
    annotated_otherwise,
    call_name,
    own_nodes,
    use_of_parameter,
)
from fxls.analysis.passes.pass_options import Arguments, PassOptions, options_for

__all__ = ["Flavour", "PassKind", "PassSpec", "find_passes"]


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
    #: return_nodes=None)``) and fxls found no call of the file giving them: run with the
    #: graph alone, it may refuse for want of them
    has_options: bool = False
    #: a class or object pass: the method it runs by (``__call__``, ``transform``)
    method: str | None = None
    #: what a class or object pass's method takes: a GraphModule or its Graph
    takes: PassKind = PassKind.GRAPH_MODULE
    #: values for the arguments besides the graph, made afresh for each run
    options: Callable[[], Arguments] | None = None
    #: required arguments no value was found for: the pass is not run
    missing: tuple[str, ...] = ()
    #: a class pass's constructor arguments (``Fuser(threshold=0.5)`` in the file)
    construct: Callable[[], Arguments] | None = None
    #: a pass the file uses on torch.export's graphs (``export_passes``): it runs on
    #: those, not on fxcore's
    export: ExportUse | None = None


def find_passes(tree: ast.Module, namespace: dict[str, Any], filename: str) -> list[PassSpec]:
    """The passes defined at the top level of ``tree``, resolved in ``namespace``."""
    calls, traced_names = _calls_and_traces(tree)
    called = _called_with_graphs(calls, traced_names)
    definitions = Definitions(tree, filename)
    bases = _base_classes(tree, namespace)
    found: list[PassSpec] = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            spec = _function_pass(statement, namespace, filename, called, calls)
        elif isinstance(statement, ast.ClassDef):
            spec = _class_pass(statement, namespace, filename, definitions, bases, calls)
        else:
            spec = None
        if spec is not None:
            found.append(spec)
    found.extend(_pass_managers(tree, namespace, filename))
    found.extend(_pass_objects(tree, namespace, filename, definitions,
                               {s.target for s in found}))
    return found


def name_span(filename: str, node: ast.FunctionDef | ast.ClassDef | ast.expr) -> SourceSpan:
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        keyword = "def " if isinstance(node, ast.FunctionDef) else "class "
        col = node.col_offset + len(keyword)
        return SourceSpan(filename, node.lineno, node.lineno, col, col + len(node.name.encode()),
                          node.name)
    return SourceSpan(filename, node.lineno, node.end_lineno or node.lineno, node.col_offset,
                      node.end_col_offset or node.col_offset)


def _function_pass(
    definition: ast.FunctionDef, namespace: dict[str, Any], filename: str,
    called: dict[str, PassKind], calls: dict[str, list[ast.Call]],
) -> PassSpec | None:
    function = namespace.get(definition.name)
    if not callable(function) or not definition.args.args:
        return None
    first = definition.args.args[0]
    if annotated_otherwise(first.annotation, namespace):
        return None  # ``def use_mkl_length(graph: MklSubgraph)``: not an FX graph
    kind, flavour = annotated_kind(first.annotation, namespace)
    if kind is None or kind is PassKind.MODULE:
        used = use_of_parameter(definition, first.arg)
        # an nn.Module parameter that is never traced: not a pass
        never_traced = kind is PassKind.MODULE and used is not PassKind.MODULE
        kind = None if never_traced else used or kind
    if kind is None:
        kind = called.get(definition.name)
    if kind is None:
        return None
    options = options_for(definition, 1, calls.get(definition.name, []), namespace, filename)
    if _needs_more(definition.args) and not options.from_call and definition.name in calls:
        return None  # a helper the file's passes call with their own nodes (make_neg(graph, node))
    if flavour is None:
        flavour = _namespace_flavour(namespace)
    returns = [node for node in own_nodes(definition)
               if isinstance(node, ast.Return) and node.value is not None]
    return PassSpec(definition.name, kind, function, name_span(filename, definition), flavour,
                    returns, first.arg,
                    _has_options(definition.args) and not options.from_call,
                    options=options.make, missing=options.missing)


def _needs_more(arguments: ast.arguments) -> bool:
    """It needs more than one argument (a helper of a pass unless the file calls it)."""
    positional = [*arguments.posonlyargs, *arguments.args]
    required = len(positional) - len(arguments.defaults)
    missing_keyword = any(d is None for d in arguments.kw_defaults)
    return required > 1 or missing_keyword


def _has_options(arguments: ast.arguments) -> bool:
    return len(arguments.posonlyargs) + len(arguments.args) > 1 or bool(arguments.kwonlyargs)


def _namespace_flavour(namespace: dict[str, Any]) -> Flavour:
    """fxcore when the file uses fxcore's tracer and not torch.fx's."""
    import fxcore

    modules = {getattr(v, "__name__", "") for v in namespace.values() if inspect.ismodule(v)}
    uses_fxcore = any(v is fxcore or v is fxcore.symbolic_trace for v in namespace.values())
    uses_torch_fx = "torch.fx" in modules or any(
        getattr(v, "__module__", "").startswith("torch.fx") for v in namespace.values()
        if callable(v))
    return Flavour.FXCORE if uses_fxcore and not uses_torch_fx else Flavour.TORCH_FX


def _is_trace_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        call_name(node) in TRACE_CALLS or call_name(node) == "GraphModule")


def _calls_and_traces(tree: ast.Module) -> tuple[dict[str, list[ast.Call]], set[str]]:
    """The file's calls of plain names by the name called (``fuse(gm, config)``), and the
    names it assigns a traced module to (``gm = fx.symbolic_trace(Net())``): one walk."""
    calls: dict[str, list[ast.Call]] = {}
    traced = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append(node)
        elif isinstance(node, ast.Assign) and _is_trace_call(node.value):
            traced.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _is_trace_call(
                node.value) and isinstance(node.target, ast.Name):
            traced.add(node.target.id)
    return calls, traced


def _called_with_graphs(calls: dict[str, list[ast.Call]], traced: set[str]
                        ) -> dict[str, PassKind]:
    """Functions the file calls with a traced module (or its ``.graph``) as first argument."""
    found: dict[str, PassKind] = {}
    for name, each in calls.items():
        for node in each:
            if not node.args:
                continue
            argument = node.args[0]
            if _is_trace_call(argument) or (isinstance(argument, ast.Name)
                                            and argument.id in traced):
                found.setdefault(name, PassKind.GRAPH_MODULE)
            elif isinstance(argument, ast.Attribute) and argument.attr == "graph" and (
                    _is_trace_call(argument.value) or (isinstance(argument.value, ast.Name)
                                                       and argument.value.id in traced)):
                found.setdefault(name, PassKind.GRAPH)
    return found


def _base_classes(tree: ast.Module, namespace: dict[str, Any]) -> set[type]:
    """Classes of the file that other classes of the file derive from: bases of passes
    (optimum's ``Transformation``), not passes themselves."""
    found = set()
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            cls = namespace.get(statement.name)
            if isinstance(cls, type):
                found.update(b for b in cls.__mro__[1:-1])
    return found


def _class_pass(definition: ast.ClassDef, namespace: dict[str, Any], filename: str,
                definitions: Definitions, bases: set[type], calls: dict[str, list[ast.Call]]
                ) -> PassSpec | None:
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
            return PassSpec(definition.name, kind, cls, name_span(filename, definition),
                            flavour)
    if issubclass(cls, torch.nn.Module) or cls in bases:
        return None
    method = graph_method(cls, definitions)
    if method is None:
        return None
    construct = None if constructible(cls) else _constructor_options(
        cls, definitions, calls.get(definition.name, []), namespace, filename)
    if construct is None and not constructible(cls):
        return None
    return PassSpec(definition.name, PassKind.CLASS, cls, name_span(filename, definition),
                    method.flavour or _namespace_flavour(namespace), method=method.name,
                    takes=method.takes, options=method.options and method.options.make,
                    has_options=method.has_options or (
                        construct is not None and not construct.from_call),
                    missing=construct.missing if construct else (),
                    construct=construct.make if construct else None)


def _constructor_options(cls: type, definitions: Definitions, calls: list[ast.Call],
                         namespace: dict[str, Any], filename: str) -> PassOptions | None:
    """What ``cls()`` needs, from the file's own calls of the class (``Fuser(0.5)``), else
    the defaults and annotations of its ``__init__`` (None when that is not the file's)."""
    init = definitions.of(getattr(cls, "__init__", None))
    if init is None:
        return None
    return options_for(init, 1, calls, namespace, filename, skip_in_calls=0)


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
                                      name_span(filename, target)))
    return found


def _pass_objects(tree: ast.Module, namespace: dict[str, Any], filename: str,
                  definitions: Definitions, classes: set[Any]) -> list[PassSpec]:
    """Pass objects bound to module globals (``pipeline = compose(MergeLinears(), ...)``)
    whose class is not run as a pass already."""
    found = []
    for statement in tree.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else (
            [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        for target in targets:
            value = namespace.get(target.id) if isinstance(target, ast.Name) else None
            if value is None or type(value) in classes or not _may_be_pass_object(value):
                continue
            method = graph_method(type(value), definitions)
            if method is None:
                continue
            found.append(PassSpec(target.id, PassKind.INSTANCE, value,
                                  name_span(filename, target),
                                  method.flavour or _namespace_flavour(namespace),
                                  method=method.name, takes=method.takes,
                                  options=method.options and method.options.make,
                                  has_options=method.has_options))
    return found


def _may_be_pass_object(value: Any) -> bool:
    """Not a class, function, module, model, graph or a pass kind run otherwise."""
    import torch.fx
    from torch.fx.passes.infra.pass_base import PassBase
    from torch.fx.passes.infra.pass_manager import PassManager

    import fxcore

    plain = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
             types.ModuleType, torch.nn.Module, torch.Tensor, torch.fx.Graph, fxcore.Graph,
             torch.fx.Interpreter, fxcore.Interpreter, PassBase, PassManager)
    return not isinstance(value, plain) and not isinstance(
        value, str | bytes | int | float | bool | list | tuple | dict | set | frozenset)
