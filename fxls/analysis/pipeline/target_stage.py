"""The export and compile tiers of a file: after the symbolic-trace tier has published,
each class that targets them runs through the real ``torch.export`` / dynamo on the
instance and example inputs the first tier found, or that a model of the file gives it
(``target_inputs``; ``export_trace``, ``compile_trace``).

Each class's targets are the file's (``target_choice``) unless its ``# fxls: targets``
pragma says otherwise; ``ModuleReport.targets`` holds one status per target, and a
symbolic-trace diagnostic of a class that does not target symbolic tracing is dropped
(``targeted.untargeted``).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from fxls.analysis.pipeline.compile_trace import CompileOutcome, compile_module
from fxls.analysis.pipeline.eager_outputs import eager_outputs
from fxls.analysis.pipeline.export_trace import ExportOutcome, export_module
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.findings import Findings
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.analysis.pipeline.target_inputs import TargetRun, target_runs
from fxls.analysis.pipeline.tier_budget import TierBudget
from fxls.analysis.pragmas import ClassPragmas
from fxls.analysis.target_choice import TargetChoice, parse_targets
from fxls.analysis.torch_warmth.code_caches import CodeNames
from fxls.analysis.torch_warmth.replay import COMPILE, EXPORT, warmth
from fxls.codes import Target
from fxls.report import FileReport, ModuleReport, TargetGraphs
from fxls.worker.api import send_warmth

PENDING = "pending"


def class_targets(choice: TargetChoice, file: SourceFile, name: str) -> tuple[Target, ...]:
    pragma = file.pragmas.classes.get(name, ClassPragmas()).targets
    return (parse_targets(pragma) or choice.targets) if pragma else choice.targets


def mark_targets(report: FileReport, file: SourceFile, choice: TargetChoice) -> None:
    """Each class's targets, symbolic tracing's status known, the others' pending (a class
    traced again with its real weights has a new report: marked when this runs again)."""
    report.targets = [target.value for target in choice.targets]
    report.targets_because = choice.because
    for module_report in report.modules:
        if module_report.targets:
            continue
        targets = class_targets(choice, file, module_report.name)
        module_report.targets = {
            target.value: str(module_report.status) if target is Target.SYMBOLIC_TRACE
            else PENDING for target in targets}


def wants_torch_tiers(report: FileReport) -> bool:
    return any(status == PENDING for module_report in report.modules
               for status in module_report.targets.values())


def run_torch_tiers(traced: list[TracedModule], report: FileReport, file: SourceFile,
                    findings: Findings) -> None:
    """Export and compile each class that targets them, while the job's time allows
    (``tier_budget``); their statuses and problems."""
    budget = TierBudget.of(file.settings.limits.timeout, report.timings_ms)
    runs = target_runs(traced, {module_report.name for module_report in report.modules
                                if PENDING in module_report.targets.values()})
    described: list[tuple[str, list[Any]]] = []
    code = CodeNames()
    for module_report in report.modules:
        pending = [name for name, status in module_report.targets.items()
                   if status == PENDING]
        if not pending:
            continue
        run = runs.get(module_report.name) or _not_run(module_report)
        for name in pending:
            if isinstance(run, str) or not budget.allows_another():
                module_report.targets[name] = run if isinstance(run, str) else budget.reason
                continue
            budget.start()
            if module_report.eager_outputs is None:  # what a fix must keep (quick fixes)
                graphs = module_report.target_graphs = module_report.target_graphs or \
                    TargetGraphs()
                graphs.eager_outputs = eager_outputs(run)
            outcome = _run_target(Target(name), run, file)
            budget.stop()
            module_report.targets[name] = outcome.status
            findings.add(module_report, outcome.found)
            _keep_graphs(module_report, outcome)
            _note_warmth(outcome, described, code)
    if described or code.files:
        tiers = sorted({name for module_report in report.modules
                        for name in module_report.targets if name in (EXPORT, COMPILE)})
        send_warmth(warmth(f"{file.filename} {' '.join(tiers)}", described, code))


def _note_warmth(outcome: ExportOutcome | CompileOutcome, described: list[tuple[str, list[Any]]],
                 code: CodeNames) -> None:
    """What the next job's process can warm from this class's run (``torch_warmth``)."""
    if isinstance(outcome, ExportOutcome):
        if outcome.described:
            described.append((EXPORT, outcome.described))
        return
    described.extend((COMPILE, nodes) for nodes in outcome.described)
    code.files.extend(outcome.code.files)
    code.functions.extend(outcome.code.functions)


def _run_target(target: Target, run: TargetRun,
                file: SourceFile) -> ExportOutcome | CompileOutcome:
    tracers = file.settings.tracers
    if target is Target.COMPILE:
        return compile_module(run, file, tracers.fullgraph)
    if isinstance(run.for_export, str):
        return ExportOutcome(run.for_export, [])
    run = run.for_export or run
    try:
        dynamic_shapes = _dynamic_shapes(run, file)
    except (ValueError, SyntaxError, TypeError, AttributeError) as error:
        return ExportOutcome(
            f"not run: the declared dynamic shapes cannot be used ({error})", [])
    return export_module(run, file, tracers.export_strict, dynamic_shapes)


def _keep_graphs(module_report: ModuleReport, outcome: ExportOutcome | CompileOutcome) -> None:
    """The graph export made, or the subgraphs dynamo compiled, for hover and the graph page."""
    made = outcome.graph if isinstance(outcome, ExportOutcome) else outcome.graphs
    if not made:
        return
    graphs = module_report.target_graphs = module_report.target_graphs or TargetGraphs()
    if isinstance(made, list):
        graphs.compile = made
    else:
        graphs.export = made


def _not_run(module_report: ModuleReport) -> str:
    if module_report.status.has_graph:
        return "not run"
    return f"not run: {module_report.reason or 'the class was not traced'}"


def _dynamic_shapes(run: TargetRun, file: SourceFile) -> Any:
    """Export's ``dynamic_shapes`` for the class: its ``# fxls: dynamic {"x": {0: "batch"}}``,
    else ``[tool.fxls] dynamic`` for the ``forward`` arguments it names (each named dimension
    a ``Dim`` of that name; one name shared is one dimension); None when nothing is declared."""
    text = file.pragmas.classes.get(run.name, ClassPragmas()).dynamic
    declared = ast.literal_eval(text) if text else file.settings.tracers.dynamic
    names = list(inspect.signature(run.instance.forward).bind(*run.inputs,
                                                                **run.kwargs).arguments)
    if not isinstance(declared, dict) or not set(declared) & set(names):
        if text:
            raise ValueError(f"it names no argument of `forward` ({', '.join(names)})")
        return None
    from torch.export import Dim
    dims: dict[str, Any] = {}
    return {name: {int(axis): dims.setdefault(str(dim), Dim(str(dim)))
                   for axis, dim in declared[name].items()} if name in declared else None
            for name in names}
