"""The analysis of one file: path + source text + settings -> FileReport.

Runs inside a worker job (it executes the user's file), as stages over the file's context
(``file_context``; each stage a module):

1. ``importing``: run the file as its module; what every trace of it uses.
2. ``building``: an instance of every nn.Module class.
3. ``symbolic_trace``: trace each instance (recovering trace, trace-time calls recorded),
   and each model the file builds at module level (``global_models``),
   its problems and the rules over its graph; graphs bound to module globals and edited
   at import are linted. Its diagnostics are the first result sent.
4. ``weights`` then ``observing``: real weights where the build for tracing skipped them;
   rewrite suggestions, a run of each graph and module on example inputs (shapes, backward
   nodes, FX014), the node tables. The models' complete report.
5. ``target_stage``: the classes that target export or compile through the real
   ``torch.export`` (``export_trace``) and dynamo (``compile_trace``).
6. ``pass_stage``: the file's FX passes on its models.

``findings`` keeps one diagnostic per (code, span) and applies pragmas and select/ignore;
``stopwatch`` times the stages.
"""

from __future__ import annotations

from collections.abc import Callable

import fxcore.source
from fxls.analysis.passes import PassAnalysis
from fxls.analysis.pipeline.building import build_instances
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.findings import Findings, finished, finished_so_far
from fxls.analysis.pipeline.global_models import trace_global_models
from fxls.analysis.pipeline.importing import file_context, run_file
from fxls.analysis.pipeline.node_tables import graph_report, module_graphs
from fxls.analysis.pipeline.observing import observe_traced, rewrite_candidates
from fxls.analysis.pipeline.pass_stage import run_file_passes
from fxls.analysis.pipeline.stopwatch import Stopwatch
from fxls.analysis.pipeline.symbolic_trace import trace_classes
from fxls.analysis.pipeline.target_stage import mark_targets, run_torch_tiers, wants_torch_tiers
from fxls.analysis.pipeline.weights import give_real_weights
from fxls.analysis.target_choice import choose_targets
from fxls.project.settings import Settings
from fxls.report import FileReport

__all__ = ["analyze_source"]


def analyze_source(
    path: str,
    source: str,
    settings: Settings,
    on_diagnostics: Callable[[FileReport], None] | None = None,
) -> FileReport:
    """The file's report. ``on_diagnostics`` gets the diagnostics of tracing first (every
    code but FX014 and FX020), before the rewrite matching and the example-input runs that
    add shapes, backward nodes and the graph-vs-eager check: an editor can show the
    traceability problems without waiting for those. A file with FX passes gets a second
    call with the models' complete report, before its passes run: they are the user's own
    code and can cost several times the whole analysis of the models."""
    report = FileReport(path)
    clock = Stopwatch(report.timings_ms)
    file = SourceFile.read(path, source, settings)
    fxcore.source.add_user_file(file.filename)  # a file of torch's own, checked in place
    passes = PassAnalysis(file.filename, source, file.is_reportable)
    module, failures = run_file(file, passes)
    clock.lap("import")
    report.diagnostics.extend(failures)
    if module is None:
        return finished(report, file)
    context, problems = file_context(file, module)
    report.diagnostics.extend(problems)
    findings = Findings(report)
    with clock.timed("trace"):
        with clock.timed("construct"):
            outcomes, problems = build_instances(context)
            report.diagnostics.extend(problems)
        traced = trace_classes(context, outcomes, report, findings)
        class_names = {m.name for m in report.modules}
        traced += trace_global_models(context, report, findings)
        targets = choose_targets(file.settings.tracers.targets, file.filename, source,
                                 file.root)
        mark_targets(report, file, targets)
        graphs = module_graphs(context.namespace)
        report.diagnostics.extend(passes.import_time(context.namespace))
    if on_diagnostics is not None:
        clock.lap("diagnostics")
        on_diagnostics(finished_so_far(report, file))
    with clock.timed("observe"):
        candidates = rewrite_candidates(context, traced)
        with clock.timed("real_weights"):
            give_real_weights(traced, context, report, findings)
        observe_traced(traced, context, candidates, findings)
        report.graphs.extend(graph_report(name, graph) for name, graph in graphs)
        report.diagnostics.extend(passes.rewrites_changing_outputs(context.namespace))
    mark_targets(report, file, targets)
    report.models_complete = True
    if wants_torch_tiers(report):
        if on_diagnostics is not None:  # the models' report before torch's slower tracers
            clock.lap("models")
            on_diagnostics(finished_so_far(report, file))
        with clock.timed("torch_tiers"):
            run_torch_tiers(traced, report, file, findings)
    specs = passes.find(file.tree, context.namespace)
    if specs:
        if on_diagnostics is not None:  # the models' complete report, before the passes run
            clock.lap("models")
            on_diagnostics(finished_so_far(report, file))
        with clock.timed("passes"):
            run_file_passes(passes, specs, context,
                            [t for t in traced if t.module_report.name in class_names], report)
    clock.lap("total")
    return finished(report, file)
