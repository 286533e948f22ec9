"""The file's own graphs besides its models: the functions it hands to its passes
(pytorch/examples' ``invert(f)``, a pass that traces its argument) and the GraphModules bound
to its globals (``traced = fx.symbolic_trace(f)``). A GraphModule a pass made or changed at
import is a result, not a graph to run passes on: one the file traced and then rewrote is
taken as its trace call makes it (``import_rewrites``)."""

from __future__ import annotations

import ast
import types
from typing import Any

from fxls.analysis.passes.edits import EditLog
from fxls.analysis.passes.import_rewrites import graphs_before_rewrites
from fxls.analysis.passes.runner import Subject


def file_graph_subjects(tree: ast.AST | None, namespace: dict[str, Any], log: EditLog,
                        pass_names: set[str], filename: str) -> list[Subject]:
    subjects = []
    seen: set[int] = set()
    rewritten = graphs_before_rewrites(tree, namespace, log, filename) if isinstance(
        tree, ast.Module) else []
    for name, value in [*_functions_given_to_passes(tree, namespace, pass_names),
                        *_unedited_graph_modules(namespace, log), *rewritten]:
        if id(value) in seen:
            continue
        seen.add(id(value))
        subject = _subject(name, value)
        if subject is not None:
            subjects.append(subject)
    return subjects


def _functions_given_to_passes(tree: ast.AST | None, namespace: dict[str, Any],
                               pass_names: set[str]) -> list[tuple[str, Any]]:
    """Functions of the file a call of one of its passes gets as first argument."""
    if not isinstance(tree, ast.Module):
        return []
    module_name = namespace.get("__name__")
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in pass_names and node.args
                and isinstance(node.args[0], ast.Name)):
            continue
        value = namespace.get(node.args[0].id)
        if isinstance(value, types.FunctionType) and value.__module__ == module_name:
            found.append((node.args[0].id, value))
    return found


def _unedited_graph_modules(namespace: dict[str, Any], log: EditLog) -> list[tuple[str, Any]]:
    import torch.fx

    from fxcore.graph_module import GraphModule

    return [(name, value) for name, value in namespace.items()
            if isinstance(value, torch.fx.GraphModule | GraphModule)
            and not name.startswith("_") and log.graph_state(value.graph) is None]


def _subject(name: str, value: Any) -> Subject | None:
    """The graph of a function (traced by fxcore) or of a GraphModule (copied into fxcore),
    its torch.fx GraphModule the instance a module-to-module pass traces."""
    import torch.fx

    import fxcore
    from fxcore.interop import from_torch_fx, to_torch_fx
    from fxls.analysis.inputs import infer_inputs

    try:
        if isinstance(value, torch.fx.GraphModule):
            core, instance = from_torch_fx(value), value
        elif isinstance(value, fxcore.GraphModule):
            core, instance = value, to_torch_fx(value)
        else:
            core = fxcore.symbolic_trace(value)
            instance = to_torch_fx(core)
    except Exception:
        return None
    try:
        inputs = infer_inputs(core)
    except Exception:
        inputs = None
    return Subject(name, core, instance, lambda: inputs)
