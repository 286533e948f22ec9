"""Passes over torch.export's graphs (ATen-level): those the file registers with Inductor
and those it applies to an ``ExportedProgram``.

Inductor hands ``post_grad_custom_pre_pass`` / ``post_grad_custom_post_pass`` (a function
or a ``CustomGraphPass`` instance, set on ``torch._inductor.config``, in a
``config.patch(...)`` or in ``torch.compile(options={...})``) its post-grad graph: a
``torch.fx.Graph`` of core ATen operators with the parameters lifted to inputs, the form
of ``ep.run_decompositions().graph_module``. A pass applied to ``ep`` (``ep =
torch.export.export(...)``), to ``ep.graph_module`` or ``ep.graph``, or to the module
``ep.module()`` unlifts (PT2E's style) gets that form. Such a pass runs on the export
graphs of the file's models, in its form, and not on fxcore's graphs: an ATen pass finds
nothing to do there, or refuses them.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from typing import Any

from fxls.analysis.passes.discovery import PassSpec, name_span
from fxls.analysis.passes.parameters import (
    ExportForm,
    ExportUse,
    Flavour,
    PassKind,
    call_name,
    own_nodes,
)

INDUCTOR_HOOKS = frozenset({"post_grad_custom_pre_pass", "post_grad_custom_post_pass"})
_EXPORT_CALLS = frozenset({"export", "draft_export", "export_for_training",
                           "run_decompositions"})
_RETYPED = (PassKind.GRAPH_MODULE, PassKind.GRAPH)
#: what a file that uses a pass on export graphs must say somewhere
_MENTIONS = re.compile(r"(?:export|export_for_training|run_decompositions)\s*\(")


def mark_export_passes(found: list[PassSpec], tree: ast.Module, source: str,
                       namespace: dict[str, Any], filename: str) -> list[PassSpec]:
    """``found`` with the passes the file uses on export graphs marked (``spec.export``),
    given what the file hands them, and those discovery did not know (a function taking
    an ``ExportedProgram``) added."""
    if not _mentions_export(source):  # most files: no walk of their tree
        return found
    by_name = {spec.name: spec for spec in found}
    for name, use in export_uses(tree).items():
        spec = by_name.get(name) or _function_pass(name, use, tree, namespace, filename)
        if spec is None:
            continue
        if spec.name not in by_name:
            found.append(spec)
        spec.export = use
        if spec.kind in _RETYPED:
            spec.kind = use.takes
        elif spec.kind in (PassKind.CLASS, PassKind.INSTANCE) and use.takes in _RETYPED:
            spec.takes = use.takes  # what the file hands it (Inductor: a Graph)
    return found


def _mentions_export(source: str) -> bool:
    """The text names an Inductor hook or calls an export function somewhere."""
    if "post_grad_custom_" in source:
        return True
    return ("export" in source or "run_decompositions" in source) and bool(
        _MENTIONS.search(source))


def export_uses(tree: ast.Module) -> dict[str, ExportUse]:
    """The file's names (a function, a pass class, a pass object) it uses on export graphs,
    each with the first use found."""
    nodes = [node for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.Dict
                                                           | ast.Call)]
    names = _ExportNames(nodes)
    found: dict[str, ExportUse] = {}
    for node in nodes:
        for name, use in _uses_in(node, names):
            found.setdefault(name, use)
    return found


def _uses_in(node: ast.AST, names: _ExportNames) -> Iterator[tuple[str, ExportUse]]:
    if isinstance(node, ast.Assign):
        if any(_sets_a_hook(target) for target in node.targets):
            yield from _registered(node.value)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value in INDUCTOR_HOOKS:
                yield from _registered(value)
    elif isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg in INDUCTOR_HOOKS:
                yield from _registered(keyword.value)
        called = _called_name(node.func)
        use = names.use_of(node.args[0]) if node.args else None
        if called is not None and use is not None:
            yield called, use


def _sets_a_hook(target: ast.expr) -> bool:
    """``config.post_grad_custom_post_pass = ...`` or ``options["post_grad_..."] = ...``."""
    if isinstance(target, ast.Attribute):
        return target.attr in INDUCTOR_HOOKS
    return isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and (
        target.slice.value in INDUCTOR_HOOKS)


def _registered(value: ast.expr) -> Iterator[tuple[str, ExportUse]]:
    """A function or pass object given to Inductor: it gets the post-grad ``Graph``."""
    name = _called_name(value)  # ``fuse``, or ``Fuse`` of ``Fuse()``
    if name is not None:
        yield name, ExportUse(ExportForm.DECOMPOSED, PassKind.GRAPH)


def _called_name(func: ast.expr) -> str | None:
    """``fuse`` of ``fuse(...)``, ``Fuse`` of ``Fuse()(...)``."""
    if isinstance(func, ast.Call):
        func = func.func
    return func.id if isinstance(func, ast.Name) else None


class _ExportNames:
    """Names the file binds to an ExportedProgram, its graph module, or the module
    ``ep.module()`` unlifts; and the form an expression of them gives a pass."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.programs: set[str] = set()
        self.graph_modules: set[str] = set()
        self.modules: set[str] = set()
        assignments = [node for node in nodes if isinstance(node, ast.Assign)
                       and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)]
        for _ in range(3):  # ``ep = export(...)`` may come after its use in the walk's order
            for node in assignments:
                target = node.targets[0]
                assert isinstance(target, ast.Name)
                use = self.use_of(node.value)
                if use is None:
                    continue
                if use.takes is PassKind.EXPORTED_PROGRAM:
                    self.programs.add(target.id)
                elif use.takes is PassKind.GRAPH_MODULE:
                    (self.modules if use.form is ExportForm.MODULE
                     else self.graph_modules).add(target.id)

    def use_of(self, value: ast.expr) -> ExportUse | None:
        if self._is_program(value):
            return ExportUse(ExportForm.PROGRAM, PassKind.EXPORTED_PROGRAM)
        form = self._module_form(value)
        if form is not None:
            return ExportUse(form, PassKind.GRAPH_MODULE)
        if isinstance(value, ast.Attribute) and value.attr == "graph":
            form = (ExportForm.GRAPH_MODULE if self._is_program(value.value)
                    else self._module_form(value.value))
            if form is not None:
                return ExportUse(form, PassKind.GRAPH)
        return None

    def _is_program(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Name):
            return value.id in self.programs
        return isinstance(value, ast.Call) and call_name(value) in _EXPORT_CALLS and (
            "onnx" not in ast.unparse(value.func))

    def _module_form(self, value: ast.expr) -> ExportForm | None:
        if isinstance(value, ast.Name):
            if value.id in self.graph_modules:
                return ExportForm.GRAPH_MODULE
            return ExportForm.MODULE if value.id in self.modules else None
        if isinstance(value, ast.Attribute) and value.attr == "graph_module" and (
                self._is_program(value.value)):
            return ExportForm.GRAPH_MODULE
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
                value.func.attr == "module" and self._is_program(value.func.value)):
            return ExportForm.MODULE
        return None


def _function_pass(name: str, use: ExportUse, tree: ast.Module, namespace: dict[str, Any],
                   filename: str) -> PassSpec | None:
    """A function of the file discovery did not take for a pass (its parameter is an
    ``ExportedProgram``, or used only through attributes it does not know), needing
    nothing but the graph."""
    function = namespace.get(name)
    definition = next((s for s in tree.body if isinstance(s, ast.FunctionDef)
                       and s.name == name), None)
    if definition is None or not inspect.isfunction(function) or not definition.args.args:
        return None
    positional = [*definition.args.posonlyargs, *definition.args.args]
    if len(positional) - len(definition.args.defaults) > 1 or any(
            d is None for d in definition.args.kw_defaults):
        return None
    returns = [node for node in own_nodes(definition)
               if isinstance(node, ast.Return) and node.value is not None]
    return PassSpec(name, use.takes, function, name_span(filename, definition),
                    Flavour.TORCH_FX, returns, positional[0].arg)
