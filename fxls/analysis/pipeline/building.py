"""Stage two: an instance of every class of the file (``construction``), and the
diagnostic of a class that has none, or whose real build failed."""

from __future__ import annotations

import fxcore.source
from fxcore.source import SourceSpan
from fxls.analysis.construction import (
    FileScope,
    NotBuilt,
    Outcome,
    build_all,
    construction_failed,
)
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import FileContext, SourceFile
from fxls.analysis.pragmas import ClassPragmas
from fxls.analysis.real_weights import RealWeights
from fxls.report import Diagnostic, ModuleReport, TraceStatus


def build_instances(context: FileContext) -> tuple[dict[type, Outcome], list[Diagnostic]]:
    """Each class's instance or why it has none; FX004 for entry points that failed."""
    file = context.file
    outcomes, problems = build_all(list(context.classes), FileScope(
        context.module_name, context.namespace, file.module_tree, file.source, file.pragmas,
        file.settings.project.entry_points))
    first_line = file.first_line()
    return outcomes, [diagnostic("FX004", problem, first_line, "") for problem in problems]


def not_built(
    outcome: NotBuilt, module_report: ModuleReport, span: SourceSpan, file: SourceFile
) -> Diagnostic:
    """The diagnostic of a class without an instance (``module_report`` gets the reason)."""
    module_report.reason = outcome.reason
    name = module_report.name
    where = span
    if outcome.error is not None:
        module_report.status = TraceStatus.FAILED
        spans = fxcore.source.spans_of_traceback(outcome.error.__traceback__)
        where = next((s for s in reversed(spans) if s.file == file.filename), span)
    elif outcome.message.startswith("the `init` pragma"):
        line = file.pragmas.classes.get(name, ClassPragmas()).lines.get("init", span.line)
        if line != span.line:
            where = SourceSpan(file.filename, line, line, 0, 0)
    return diagnostic(outcome.code, outcome.message, where, name, parameters=outcome.missing)


def real_build_failed(
    weights: RealWeights, cls: type, module_report: ModuleReport, span: SourceSpan,
    file: SourceFile,
) -> Diagnostic:
    """The report of a real build that raised or built another model than the one traced
    (``module_report`` gets the reason; its status stays that of the trace)."""
    status = module_report.status
    if weights.error is not None:
        item = not_built(construction_failed(cls, weights.error), module_report, span, file)
    else:
        message = (f"building `{cls.__name__}` for real gave another model than the one "
                   f"traced ({weights.difference})")
        item = not_built(NotBuilt("FX102", message, message), module_report, span, file)
    if status is not TraceStatus.SKIPPED:
        module_report.status = status
    return item
