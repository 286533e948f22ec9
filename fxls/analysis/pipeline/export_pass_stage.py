"""The passes a file uses on torch.export's graphs (``passes.export_passes``), run on the
export graph of each of its models (``passes.export_graphs``) in the form the file hands them,
after the FX passes' stage has picked them out: the models' instances and example inputs
are those the export tier uses (``target_inputs``); a file without a model class uses the
ExportedPrograms it keeps, else the models it builds at module level, else the
representative graphs, exported. The file pays for the export only when it has such a pass.
"""

from __future__ import annotations

import torch

from fxls.analysis.passes import PassAnalysis, Subject, compare_outputs
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.passes.export_graphs import (
    ExportedModel,
    export_label,
    export_model,
    export_subject,
    global_programs,
)
from fxls.analysis.passes.parameters import ExportForm
from fxls.analysis.passes.representative import GRAPHS
from fxls.analysis.passes.run_reports import (
    raised_on_stand_ins_as_information,
    with_passes_not_run,
)
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.first_layer_inputs import first_layer_inputs
from fxls.analysis.pipeline.global_models import module_level_models
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.analysis.pipeline.target_inputs import TargetRun, target_runs
from fxls.report import FileReport, PassGraphRun, PassReport


def run_on_export_graphs(passes: PassAnalysis, specs: list[PassSpec], context: FileContext,
                         models: list[TracedModule], report: FileReport) -> list[PassReport]:
    """Each pass on the export graph of each model, in the form the file hands it
    (``export_graphs``); a model without one is a run with the reason. A file without a
    model class runs them on the ExportedPrograms it keeps, else on the models it builds
    at module level, else (a module of passes) on the representative graphs, exported."""
    runs = target_runs(models, {m.module_report.name for m in models}) if models else {}
    exported: dict[str, ExportedModel | str] = {
        name: _exported(name, run) for name, run in runs.items()}
    exported = exported or {**global_programs(context.namespace, passes.log)}
    exported = exported or _global_models(context)
    graphs_from = "export"
    if not exported:
        exported, graphs_from = _representative_exports(), "representative"
    subjects_of: dict[ExportForm, dict[str, Subject | str]] = {}
    ran: dict[int, PassReport] = {}
    for spec in specs:
        if spec.missing or spec.export is None:
            continue
        form = spec.export.form
        if form not in subjects_of:
            subjects_of[form] = {name: export_subject(model, form)
                                 for name, model in exported.items()}
        subjects = subjects_of[form]
        results = passes.run([spec], [s for s in subjects.values() if isinstance(s, Subject)],
                             graphs_from)
        report.diagnostics.extend(results.diagnostics)
        report.diagnostics.extend(compare_outputs(results.outcomes))
        (ran[id(spec)],) = results.reports
        ran[id(spec)].runs.extend(PassGraphRun(export_label(name), problem=why)
                                  for name, why in subjects.items() if isinstance(why, str))
    labels = [export_label(name) for name in exported]
    if graphs_from == "representative":
        raised_on_stand_ins_as_information(report, set(labels))
    return with_passes_not_run(specs, [ran[id(s)] for s in specs if id(s) in ran], labels)


def _global_models(context: FileContext) -> dict[str, ExportedModel | str]:
    """The models the file builds at module level (``model = resnet18()``; those
    ``global_models`` makes roots), exported on what their first layer takes."""
    found: dict[str, ExportedModel | str] = {}
    for model in module_level_models(context, set()):
        inputs = first_layer_inputs(model.instance)
        found[model.name] = (export_model(model.name, model.instance, inputs, {})
                             if inputs is not None
                             else "not run: fxls found no example inputs for it")
    return found


def _representative_exports() -> dict[str, ExportedModel | str]:
    exported: dict[str, ExportedModel | str] = {}
    for name, (cls, make_inputs) in GRAPHS.items():
        torch.manual_seed(0)
        label = f"{name} (representative)"
        exported[label] = export_model(label, cls().eval(), make_inputs(), {})
    return exported


def _exported(name: str, run: TargetRun | str) -> ExportedModel | str:
    """The model exported on its example inputs (those of a call of tensors only, when the
    inputs found are more), or why not."""
    if isinstance(run, TargetRun) and run.for_export is not None:
        run = run.for_export
    if isinstance(run, str):
        return run
    return export_model(name, run.instance, run.inputs, run.kwargs)
