"""Stage one: run the file as its module, and learn from its namespace what every trace
of it uses (leaf modules, autowrapped functions, the project's rewrite rules)."""

from __future__ import annotations

import importlib
import types
from pathlib import Path
from typing import Any

import torch

from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.library_declarations import registrations
from fxls.analysis.loading import class_definitions, execute_file, module_classes
from fxls.analysis.passes import PassAnalysis
from fxls.analysis.pipeline.file_context import FileContext, SourceFile
from fxls.analysis.pragmas import ClassPragmas
from fxls.analysis.user_rules import load_rule_files
from fxls.report import Diagnostic, RelatedInfo


def run_file(file: SourceFile, passes: PassAnalysis) -> tuple[types.ModuleType | None,
                                                              list[Diagnostic]]:
    """The executed module (None when nothing of it ran) and its FX100s."""
    settings = file.settings
    torch.manual_seed(0)  # the file's own models get the same values in every run
    with passes.log.active():  # passes the file runs at import are checked too
        loaded = execute_file(Path(file.filename), file.source, file.module_tree, file.location,
                              (settings.project.root,) if settings.project.root else ())
    passes.log.crashed([failure.span for failure in loaded.failures])
    found = []
    for failure in loaded.failures:
        item = diagnostic("FX100", failure.message, failure.span, "")
        item.related.extend(RelatedInfo(to_span(s), "raised here") for s in failure.related)
        found.append(item)
    return loaded.module, found


def file_context(file: SourceFile, module: types.ModuleType) -> tuple[FileContext,
                                                                      list[Diagnostic]]:
    """What every class of the file is traced with; FX004 for settings it cannot use."""
    declared = registrations()
    namespace = dict(vars(module))
    definitions = class_definitions(file.tree)
    classes = module_classes(module, definitions)
    opaque = _resolve_functions(file.pragmas.opaque, namespace)
    leaf_names = (*file.settings.tracing.leaf_modules, *(
        f"{cls.__module__}.{cls.__qualname__}" for cls in classes
        if file.pragmas.classes.get(cls.__name__, ClassPragmas()).leaf
    ), *sorted(declared.leaf_classes), *(
        f"{o.__module__}.{o.__qualname__}" for o in opaque
        if isinstance(o, type) and issubclass(o, torch.nn.Module)))
    autowrap = (*_resolve_functions(file.settings.tracing.autowrap_functions, namespace),
                *declared.functions, *(o for o in opaque if not isinstance(o, type)))
    user_rules, rule_problems = load_rule_files(file.settings.tracing.rule_files, file.root)
    context = FileContext(file, module.__name__, namespace, definitions, tuple(classes),
                          leaf_names, autowrap, declared.declared_by, tuple(user_rules))
    return context, _setting_problems(file, namespace, rule_problems)


def _setting_problems(file: SourceFile, namespace: dict[str, Any],
                      rule_problems: list[str]) -> list[Diagnostic]:
    first_line = file.first_line()
    found = [diagnostic("FX004", f"fxls could not use a rewrite rule: {problem}", first_line,
                        "") for problem in rule_problems]
    unknown = [f"`{name}`" for name in file.settings.tracing.autowrap_functions
               if not _resolve_functions([name], namespace)]
    if unknown:
        found.append(diagnostic(
            "FX004", f"fxls could not use `autowrap_functions` {', '.join(unknown)}: no such "
            "function (write each as `package.module.function`)", first_line, ""))
    return found


def _resolve_functions(names: list[str], namespace: dict[str, Any]) -> tuple[Any, ...]:
    found = []
    for name in names:
        if name in namespace and callable(namespace[name]):
            found.append(namespace[name])
            continue
        module_name, _, attr = name.rpartition(".")
        try:
            found.append(getattr(importlib.import_module(module_name), attr))
        except Exception:
            continue
    return tuple(found)
