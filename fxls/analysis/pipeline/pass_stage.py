"""The third stage: the file's FX passes, run on its own graphs (its root models, else the
models it builds at module level, else the functions it hands to its passes and the
GraphModules it keeps unedited), else on the project's ``pass_models``, else on the
representative graphs; and FX017 for a pass that changes a model's outputs. The passes the
file uses on torch.export's graphs run on those instead (``export_pass_stage``).

A pass that gets no run on the file's graphs (an Interpreter without inputs) runs on the
representative graphs. What a pass raises there is information, not an error: a stand-in
graph is none of the user's, and a pass may refuse it by design (pytorch/examples'
``invert`` raises on a module call)."""

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
from fxls.analysis.passes.after_shapes import record_changed_shapes
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.passes.file_graphs import file_graph_subjects
from fxls.analysis.passes.module_copies import file_instance
from fxls.analysis.passes.run_reports import (
    raised_on_stand_ins_as_information,
    with_passes_not_run,
)
from fxls.analysis.passes.runner import PassResults
from fxls.analysis.pipeline.export_pass_stage import run_on_export_graphs
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.report import FileReport, PassReport, TraceStatus


def run_file_passes(passes: PassAnalysis, specs: list[PassSpec], context: FileContext,
                    traced: list[TracedModule], report: FileReport) -> None:
    """Run ``specs`` and add what they did and their diagnostics to ``report``: the passes
    the file uses on torch.export's graphs on the export graphs of its models, the others
    on fxcore's."""
    on_fx = [s for s in specs if s.export is None]
    on_export = [s for s in specs if s.export is not None]
    done: dict[int, PassReport] = {}
    if on_fx:
        done.update(zip(map(id, on_fx), _on_fx_graphs(passes, on_fx, context, traced, report),
                        strict=True))
    if on_export:
        done.update(zip(map(id, on_export), run_on_export_graphs(
            passes, on_export, context, _roots(traced, traced_only=False), report),
            strict=True))
    report.passes = [done[id(s)] for s in specs]


def _on_fx_graphs(passes: PassAnalysis, specs: list[PassSpec], context: FileContext,
                  traced: list[TracedModule], report: FileReport) -> list[PassReport]:
    runnable = [s for s in specs if not s.missing]
    subjects, graphs_from = _subjects(context, traced, report, passes, runnable)
    results = passes.run(runnable, subjects, graphs_from)
    stand_ins = subjects if graphs_from == "representative" else _stand_ins_where_no_run(
        passes, runnable, results)
    report.diagnostics.extend(results.diagnostics)
    report.diagnostics.extend(compare_outputs(results.outcomes))
    record_changed_shapes(results.outcomes)
    raised_on_stand_ins_as_information(report, {s.label for s in stand_ins})
    return with_passes_not_run(specs, results.reports, [s.label for s in subjects])


def _stand_ins_where_no_run(passes: PassAnalysis, specs: list[PassSpec],
                            results: PassResults) -> list[Subject]:
    """Run on the representative graphs each pass the file's graphs gave no run; the
    representative subjects used (none when every pass ran)."""
    unrun = [i for i, r in enumerate(results.reports) if not r.runs]
    if not unrun:
        return []
    stand_ins = representative_subjects()
    extra = passes.run([specs[i] for i in unrun], stand_ins, "representative")
    for index, each in zip(unrun, extra.reports, strict=True):
        results.reports[index] = each
    results.diagnostics.extend(extra.diagnostics)
    results.outcomes.extend(extra.outcomes)
    return stand_ins


def _subjects(context: FileContext, traced: list[TracedModule], report: FileReport,
              passes: PassAnalysis, specs: list[PassSpec]) -> tuple[list[Subject], str]:
    """The graphs the passes run on, and what they are; FX004 for ``pass_models`` that
    cannot be used."""
    subjects = [Subject(t.module_report.name, t.ctx.graph_module,
                        file_instance(context.namespace, t.instance), partial(_inputs_of, t))
                for t in _roots(traced, traced_only=True)]
    if not subjects:
        subjects = global_subjects(context.namespace, context.leaf_names, context.autowrap)
    if not subjects:
        subjects = file_graph_subjects(context.file.tree, context.namespace, passes.log,
                                       {s.name for s in specs}, context.file.filename)
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


def _roots(traced: list[TracedModule], traced_only: bool) -> list[TracedModule]:
    """The file's models: the classes no other one contains (a block of the network adds
    nothing); those symbolic tracing traced whole when ``traced_only``."""
    roots = [t for t in traced if t.module_report.via is None and (not traced_only or (
        t.module_report.status is TraceStatus.TRACED and t.ctx.graph_module))]
    inside = {type(m) for t in roots for m in list(t.instance.modules())[1:]}
    return [t for t in roots if type(t.instance) not in inside]


def _inputs_of(traced: TracedModule) -> tuple[Any, ...] | None:
    return traced.ctx.example_inputs
