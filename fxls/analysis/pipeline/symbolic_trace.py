"""The symbolic-trace tracer: each built instance traced as torch.fx's ``symbolic_trace``
would, by fxcore's recovering trace (every problem of a forward, not the first), while the
recorder notes trace-time calls; the trace's problems and the rules over its graph as
diagnostics; the traced state the second phase runs on example inputs.

A tracer is one module of the pipeline: from the ``FileContext`` and the built instances,
each class's ``ModuleReport`` and diagnostics. The export and compile tracers
(``torch.export``, ``torch._dynamo``) are modules beside this one.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import torch

from fxcore.graph_module import GraphModule
from fxcore.recovering import CollectedTrace, has_forward, trace_collecting_issues
from fxcore.source import SourceSpan
from fxls.analysis import rules
from fxls.analysis.codegen_failure import codegen_failure, misread_names
from fxls.analysis.construction import Built, NotBuilt, Outcome
from fxls.analysis.context import ModuleContext, run_rule
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.inputs import eval_pragma_args, infer_inputs
from fxls.analysis.loading import class_span
from fxls.analysis.pipeline.building import not_built, real_build_failed
from fxls.analysis.pipeline.file_context import FileContext, SourceFile
from fxls.analysis.pipeline.findings import Findings
from fxls.analysis.pipeline.given_structure import GivenStructure
from fxls.analysis.pipeline.mode_difference import mode_difference
from fxls.analysis.pipeline.trace_issues import exit_diagnostic, issue_diagnostic
from fxls.analysis.pragmas import ClassPragmas
from fxls.analysis.real_weights import RealWeights, State
from fxls.analysis.recorder import TraceRecorder
from fxls.analysis.shape_build import parameter_values_read
from fxls.report import Diagnostic, FileReport, ModuleReport, TraceStatus


@dataclass
class TracedModule:
    """A traced class between the two phases: what its example-input runs need."""

    module_report: ModuleReport
    instance: torch.nn.Module
    ctx: ModuleContext
    span: SourceSpan
    #: the example inputs came from an ``args`` pragma (never replaced)
    inputs_from_pragma: bool = False
    #: the instance was built without initialisers: its real weights (see ``real_weights``)
    weights: RealWeights | None = None
    #: the inputs its root gave it in the root's eager run (a harvested instance)
    captured: tuple[Any, ...] | None = None

    @property
    def inputs_inferred(self) -> bool:
        return not self.inputs_from_pragma and self.captured is None


#: a class's report, its diagnostics and, when it was traced, its traced state
ClassResult = tuple[ModuleReport, list[Diagnostic], TracedModule | None]


@dataclass(frozen=True)
class _Tracing:
    """One class's built instance being traced: what the steps share."""

    cls: type
    outcome: Built
    module_report: ModuleReport
    span: SourceSpan
    pragmas: ClassPragmas
    concrete: Any


def trace_classes(context: FileContext, outcomes: dict[type, Outcome], report: FileReport,
                  findings: Findings) -> list[TracedModule]:
    """Every class of the file traced, its report and diagnostics added in the file's order;
    the biggest models first, and each class given the containers a model's trace gave its
    blocks (``given_structure``)."""
    built = {cls: outcome.instance for cls, outcome in outcomes.items()
             if isinstance(outcome, Built)}
    sizes = {cls: sum(1 for _ in instance.modules()) for cls, instance in built.items()}
    given = GivenStructure()
    results: dict[type, ClassResult] = {}
    with given.watching(list(built.values()), set(context.classes)):
        for cls in sorted(context.classes, key=lambda each: -sizes.get(each, 0)):
            results[cls] = trace_class(cls, context, outcomes.get(cls),
                                       given=given.concrete_args(cls))
    traced = []
    for cls in context.classes:
        module_report, found, done = results[cls]
        report.modules.append(module_report)
        findings.add(module_report, found)
        if done is not None:
            traced.append(done)
    return traced


def trace_class(cls: type, context: FileContext, outcome: Outcome | None,
                root: tuple[str, SourceSpan] | None = None,
                given: dict[str, Any] | None = None) -> ClassResult:
    """Trace and check one class's instance; the traced state for the second phase.
    ``root``: a model the file builds at module level, reported by its global's name and
    span (``global_models``); ``given``: the containers a model's trace gave this block
    (its ``concrete_args``, unless a ``concrete`` pragma says otherwise)."""
    file = context.file
    name, span = root or (cls.__name__, class_span(cls, file.filename, file.source,
                                                    context.definitions))
    module_report = ModuleReport(name, TraceStatus.SKIPPED, 0, to_span(span))
    pragmas = file.pragmas.classes.get(name, ClassPragmas())
    skipped = _not_traced_because(cls, context, outcome, pragmas)
    if skipped is not None or outcome is None:
        module_report.reason = skipped
        return module_report, [], None
    if isinstance(outcome, NotBuilt):
        return module_report, [not_built(outcome, module_report, span, file)], None
    module_report.via, module_report.entry = outcome.via, outcome.entry
    concrete = given
    if pragmas.concrete:
        try:
            concrete = eval(pragmas.concrete, {**context.namespace, "torch": torch})
        except Exception as error:
            return module_report, [diagnostic(
                "FX004", f"the `concrete` pragma of `{name}` cannot be evaluated: {error}",
                span, name)], None
    # traced in the mode it runs in
    outcome.instance.train(file.settings.tracing.trace_mode == "train")
    # ("both": the eval graph is the module's graph; the train one is only compared)
    return _trace_built(context, _Tracing(cls, outcome, module_report, span, pragmas, concrete))


def _not_traced_because(cls: type, context: FileContext, outcome: Outcome | None,
                        pragmas: ClassPragmas) -> str | None:
    instance_forward = isinstance(outcome, Built) and "forward" in vars(outcome.instance)
    if not has_forward(cls) and not instance_forward:  # (some set self.forward in __init__)
        return "it has no forward of its own (a base class): nothing to trace"
    declared_by = context.declared_leaves.get(f"{cls.__module__}.{cls.__qualname__}")
    if declared_by is not None:
        return f"a leaf module by {declared_by}"
    if pragmas.skip or pragmas.leaf or outcome is None:
        return "`# fxls: leaf`" if pragmas.leaf else "`# fxls: skip`"
    return None


def _trace_built(context: FileContext, tracing: _Tracing) -> ClassResult:
    """The trace of the built instance. One that read parameter values (which a build for
    tracing lacks) is traced again with the real weights, or the class is traced on the
    real instance when that is another model."""
    instance, weights = tracing.outcome.instance, tracing.outcome.weights
    module_report, span = tracing.module_report, tracing.span
    try:
        trace, recorder, values_read = _trace(
            instance, tracing.concrete, context,
            weights is not None and weights.state is State.PENDING)
        if values_read:
            assert weights is not None
            state = weights.realise()
            real = weights.counterpart(instance)
            if state is State.DIFFERS and real is not None:
                return trace_class(tracing.cls, context,
                                   replace(tracing.outcome, instance=real, weights=None),
                                   given=tracing.concrete)
            if state is not State.REAL:
                return module_report, [real_build_failed(
                    weights, tracing.cls, module_report, span, context.file)], None
            trace, recorder, _ = _trace(instance, tracing.concrete, context, False)
    except SystemExit as error:  # not an Exception: the recovering trace lets it through
        module_report.status = TraceStatus.FAILED
        return module_report, [exit_diagnostic(error, module_report.name, span,
                                               context.file)], None
    return _checked(context, tracing, trace, recorder)


def _trace(
    instance: torch.nn.Module, concrete: Any, context: FileContext, watch_values: bool
) -> tuple[CollectedTrace, TraceRecorder, bool]:
    """The recovering trace, the calls it recorded, and (``watch_values``) whether it read
    the values of the instance's parameters."""
    recorder = TraceRecorder()
    # the recorder's mode innermost: it takes the user's frame as its caller
    with (parameter_values_read(instance) if watch_values
          else nullcontext(lambda: False)) as values_read, recorder.active():
        trace = trace_collecting_issues(instance, concrete, leaf_modules=context.leaf_names,
                                        autowrap_functions=context.autowrap)
    return trace, recorder, values_read()


def _checked(context: FileContext, tracing: _Tracing, trace: CollectedTrace,
             recorder: TraceRecorder) -> ClassResult:
    """The trace's problems and the rules' diagnostics; the traced state."""
    file, module_report, span = context.file, tracing.module_report, tracing.span
    name, instance = module_report.name, tracing.outcome.instance
    found = [issue_diagnostic(issue, name, span, file) for issue in trace.issues]
    gm = trace.graph_module
    if gm is None:
        module_report.status = TraceStatus.FAILED
        return module_report, found + _without_graph(trace, instance, module_report, span,
                                                     file, explained=bool(found)), None
    module_report.status = TraceStatus.PARTIAL if trace.issues else TraceStatus.TRACED
    module_report.node_count = len(gm.graph.nodes)
    found += misread_names(gm.graph, instance, name, file.tree, file.filename)
    if file.settings.tracing.trace_mode == "both" and not trace.issues:
        found += mode_difference(instance, tracing.concrete, gm, name, span, context)
    torch.manual_seed(1)
    example_inputs = (None if tracing.outcome.on_meta
                      else _example_inputs(tracing.pragmas, context.namespace, gm, trace))
    ctx = ModuleContext(
        file.filename, file.source, name, instance, trace, gm, example_inputs,
        tracing.concrete, file.settings, recorder.calls, file.is_reportable,
    )
    found += run_rule(rules.dead_code, ctx, span)
    found += run_rule(rules.inplace_on_inputs, ctx, span)
    found += run_rule(rules.baked_constants, ctx, span, recorder.created_tensors)
    found += run_rule(rules.trace_time_calls, ctx, span)
    return module_report, found, TracedModule(module_report, instance, ctx, span,
                                              bool(tracing.pragmas.args),
                                              tracing.outcome.weights)


def _without_graph(trace: CollectedTrace, instance: torch.nn.Module,
                   module_report: ModuleReport, span: SourceSpan, file: SourceFile,
                   explained: bool) -> list[Diagnostic]:
    """Why a trace gave no GraphModule, unless its problems (``explained``) say it."""
    name = module_report.name
    if trace.codegen_error is not None:
        failure, module_report.reason = codegen_failure(
            trace.codegen_error, trace.graph, instance, name, span, file.tree, file.filename)
        return [failure]
    if explained:
        return []
    module_report.reason = "the trace ended without a graph or a recorded cause"
    return [diagnostic("FX004", f"`{name}` could not be traced: the trace ended without a "
                       "graph or a recorded cause", span, name)]  # never a silent "failed"


def _example_inputs(
    pragmas: ClassPragmas, namespace: dict[str, Any], gm: GraphModule, trace: CollectedTrace
) -> tuple[Any, ...] | None:
    if pragmas.args:
        try:
            return eval_pragma_args(pragmas.args, namespace)
        except Exception:
            return None
    if trace.partial:
        return None
    try:
        return infer_inputs(gm)
    except Exception:
        return None
