"""The third stage: the file's FX passes, run on its root models (else the project's
``pass_models``, else the representative graphs), and FX017 for a pass that changes a
model's outputs."""

from __future__ import annotations

from functools import partial
from typing import Any

from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.passes import (
    PassAnalysis,
    Subject,
    compare_outputs,
    global_subjects,
    project_subjects,
    representative_subjects,
)
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.report import FileReport, TraceStatus


def run_file_passes(passes: PassAnalysis, specs: list[PassSpec], context: FileContext,
                    traced: list[TracedModule], report: FileReport) -> None:
    """Run ``specs`` and add what they did and their diagnostics to ``report``."""
    subjects, graphs_from = _subjects(context, traced, report)
    results = passes.run(specs, subjects, graphs_from)
    report.passes = results.reports
    report.diagnostics.extend(results.diagnostics)
    report.diagnostics.extend(compare_outputs(results.outcomes))


def _subjects(context: FileContext, traced: list[TracedModule],
              report: FileReport) -> tuple[list[Subject], str]:
    """The graphs the passes run on, and what they are; FX004 for ``pass_models`` that
    cannot be used."""
    roots = [t for t in traced if t.module_report.via is None
             and t.module_report.status is TraceStatus.TRACED and t.ctx.graph_module]
    # a class another root already contains (a block of the network) adds nothing
    inside = {type(m) for t in roots for m in list(t.instance.modules())[1:]}
    subjects = [Subject(t.module_report.name, t.ctx.graph_module, t.instance,
                        partial(_inputs_of, t))
                for t in roots if type(t.instance) not in inside]
    if not subjects:
        subjects = global_subjects(context.namespace, context.leaf_names, context.autowrap)
    graphs_from = "models"
    settings = context.file.settings
    if not subjects and settings.project.pass_models:
        subjects, problems = project_subjects(settings.project.pass_models)
        graphs_from = "pass_models"
        first_line = context.file.first_line()
        report.diagnostics.extend(diagnostic("FX004", f"fxls could not use {problem}",
                                             first_line, "") for problem in problems)
    if not subjects:
        subjects, graphs_from = representative_subjects(), "representative"
    return subjects, graphs_from


def _inputs_of(traced: TracedModule) -> tuple[Any, ...] | None:
    return traced.ctx.example_inputs
