"""Between the phases: the real weights for every instance a build for tracing made
without its initialisers, before the second phase runs it."""

from __future__ import annotations

from fxls.analysis.construction import Built
from fxls.analysis.pipeline import symbolic_trace
from fxls.analysis.pipeline.building import real_build_failed
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.findings import Findings
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.analysis.real_weights import State
from fxls.report import FileReport


def give_real_weights(traced: list[TracedModule], context: FileContext, report: FileReport,
                      findings: Findings) -> None:
    """Each traced instance with its model's real weights (``traced`` and ``report`` updated
    where a class had to be traced again)."""
    for done in list(traced):
        _with_real_weights(done, context, report, findings, traced)


def _with_real_weights(done: TracedModule, context: FileContext, report: FileReport,
                       findings: Findings, traced: list[TracedModule]) -> None:
    """Give ``done``'s instance the real weights (those of its whole model) before it runs.
    A real build that raises is reported as a construction failure; one that differs from
    the instance traced has ``done``'s class traced again on the real instance, its report
    replaced (in ``report`` and ``traced``)."""
    weights = done.weights
    if weights is None or weights.realise() is State.REAL:
        return
    cls = type(done.instance)
    real = weights.counterpart(done.instance)
    if real is None:  # the real build raised, or has no such module
        findings.add(done.module_report, [real_build_failed(
            weights, cls, done.module_report, done.span, context.file)])
        return
    module_report, found, again = symbolic_trace.trace_class(cls, context, Built(
        real, done.module_report.entry, done.module_report.via,
        parameters=sum(t.numel() for t in (*real.parameters(), *real.buffers()))),
        given=done.ctx.concrete_args)
    report.modules[next(i for i, m in enumerate(report.modules)
                        if m is done.module_report)] = module_report
    findings.forget_module(done.module_report.name)
    findings.add(module_report, found)
    index = next(i for i, t in enumerate(traced) if t is done)
    if again is None:
        del traced[index]
    else:
        traced[index] = again
