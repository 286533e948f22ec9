"""Models a file builds at module level, as roots of their own.

A script that only builds a library model (``model = timm.create_model("vit_base_patch16_
224")``) has no class to trace, yet its model is what the user wants to see: each such
global is traced like a class, its report named by the global (``FILE::model``) at the
global's name in its assignment, its inputs inferred as a class's are (its graph's first
layer, at the size the model says it expects).

Only the outermost models the file's own statements bind, and not those the file's classes
already stand for: an instance of a class of the file is that class's (traced on its own),
a layer inside another global model is that model's, and torch's own layers without
children (``criterion = nn.CrossEntropyLoss()``) are no model. GraphModules are graphs
already (a pass's input or output). The file's FX passes keep running on its classes'
models (``pass_stage``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.fx

from fxcore.graph_module import GraphModule
from fxcore.recovering import has_forward
from fxcore.source import SourceSpan
from fxls.analysis.construction import Built, on_meta_device, parameter_count
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.findings import Findings
from fxls.analysis.pipeline.symbolic_trace import TracedModule, trace_class
from fxls.report import FileReport

#: an entry longer than this is shown as its callee, ``timm.create_model(...)``
_ENTRY_CHARS = 80


@dataclass(frozen=True)
class GlobalModel:
    name: str
    instance: torch.nn.Module
    #: the global's name in the statement that binds it
    span: SourceSpan
    #: the expression that built it, as the status shows how a model was built
    entry: str


def trace_global_models(context: FileContext, report: FileReport,
                        findings: Findings) -> list[TracedModule]:
    """Each module-level model traced, its report and diagnostics added."""
    traced = []
    for model in module_level_models(context, {m.name for m in report.modules}):
        built = Built(model.instance, model.entry, on_meta=on_meta_device(model.instance),
                      parameters=parameter_count(model.instance))
        module_report, found, done = trace_class(type(model.instance), context, built,
                                                 root=(model.name, model.span))
        report.modules.append(module_report)
        findings.add(module_report, found)
        if done is not None:
            traced.append(done)
    return traced


def module_level_models(context: FileContext, taken: set[str]) -> list[GlobalModel]:
    """The models the file's module-level statements bind, outermost first, one per
    instance (its first name); none named as a module of the report already (``taken``)."""
    tree = context.file.module_tree
    if tree is None:
        return []
    own_classes = set(context.classes)
    found: dict[int, GlobalModel] = {}
    for name, statement in _module_level_bindings(tree):
        value = context.namespace.get(name)
        if (not isinstance(value, torch.nn.Module) or id(value) in found or name in taken
                or name.startswith("_") or type(value) in own_classes or not _is_model(value)):
            continue
        found[id(value)] = GlobalModel(name, value, _name_span(context, statement, name),
                                       _entry(context.file.source, statement))
    inner = {id(m) for model in found.values()
             for m in model.instance.modules() if m is not model.instance}
    return [model for key, model in found.items() if key not in inner]


def _is_model(value: torch.nn.Module) -> bool:
    if isinstance(value, GraphModule | torch.fx.GraphModule):
        return False
    if not (has_forward(type(value)) or "forward" in vars(value)):
        return False  # ModuleList, ModuleDict: containers, not models
    torch_layer = type(value).__module__.startswith("torch.")
    return not (torch_layer and next(value.children(), None) is None)


_Binding = ast.Assign | ast.AnnAssign


def _module_level_bindings(tree: ast.Module) -> Iterator[tuple[str, _Binding]]:
    """(name, statement) for each name an assignment binds at module level, in order, also
    inside the ``if``/``try``/``with`` blocks that run at import."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    yield target.id, statement
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            if isinstance(statement.target, ast.Name):
                yield statement.target.id, statement
        elif isinstance(statement, ast.If) and not _is_main_guard(statement):
            pending[:0] = [*statement.body, *statement.orelse]
        elif isinstance(statement, ast.Try):
            pending[:0] = [*statement.body, *statement.orelse, *statement.finalbody]
        elif isinstance(statement, ast.With):
            pending[:0] = statement.body


def _is_main_guard(statement: ast.If) -> bool:
    """``if __name__ == "__main__":``, which does not run when the file is imported."""
    test = statement.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__")


def _name_span(context: FileContext, statement: _Binding, name: str) -> SourceSpan:
    """The global's name in ``statement`` (ast's columns are UTF-8 bytes, as spans')."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    target = next(t for t in targets if isinstance(t, ast.Name) and t.id == name)
    return SourceSpan(context.file.filename, target.lineno, target.lineno, target.col_offset,
                      target.end_col_offset or target.col_offset + len(name))


def _entry(source: str, statement: _Binding) -> str:
    value = statement.value
    assert value is not None
    text = " ".join((ast.get_source_segment(source, value) or "").split())
    if len(text) > _ENTRY_CHARS and isinstance(value, ast.Call):
        return f"{ast.get_source_segment(source, value.func)}(...)"
    return text
