"""The second phase: each traced module's rewrite suggestions (FX020), one run of its graph
on example inputs (shapes, backward nodes, output signature), one run of the module itself
(FX014), and its node tables."""

from __future__ import annotations

from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis import rewrites, rules
from fxls.analysis.construction import INFERRED
from fxls.analysis.context import ModuleContext, run_rule
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.inputs import infer_inputs, retry_size, spatial_size
from fxls.analysis.observe import observe, run_eager, signature
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.findings import Findings
from fxls.analysis.pipeline.input_capture import capturing_inputs, inputs_wanted
from fxls.analysis.pipeline.node_tables import fill_node_tables
from fxls.analysis.pipeline.partial_shapes import observe_partial_graph
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.analysis.real_weights import State
from fxls.analysis.user_rules import find_user_rewrites
from fxls.report import Diagnostic

_MAX_NODES_FOR_AUTOGRAD = 3000


def rewrite_candidates(context: FileContext,
                       traced: list[TracedModule]) -> list[rewrites.Candidate]:
    """The file's expressions a built-in rewrite rule matches (none when nothing traced)."""
    file = context.file
    if file.tree is None or not traced:
        return []
    return rewrites.candidates(file.tree, file.source, context.namespace)


def observe_traced(traced: list[TracedModule], context: FileContext,
                   candidates: list[rewrites.Candidate], findings: Findings) -> None:
    """The second phase of every traced module, roots first: their eager runs capture the
    inputs of the instances found inside them."""
    harvested = {id(t.instance): t for t in traced if t.module_report.via is not None}
    for done in sorted(traced, key=lambda t: t.module_report.via is not None):
        if done.captured is not None and not done.inputs_from_pragma:
            done.ctx.example_inputs = done.captured
        if done.weights is not None and done.weights.state is not State.REAL:
            done.ctx.example_inputs = None  # no real weights to run it with
        findings.add(done.module_report, observe_class(done, context, candidates, harvested))


def observe_class(traced: TracedModule, context: FileContext,
                  candidates: list[rewrites.Candidate],
                  harvested: dict[int, TracedModule]) -> list[Diagnostic]:
    """Rewrite suggestions (FX020); run the graph on the example inputs (shapes, backward
    nodes, output signature), then the module itself (FX014); fill in the node table."""
    ctx, file = traced.ctx, context.file
    gm = ctx.graph_module
    assert gm is not None  # only traced classes get here
    found = [*run_rule(rewrites.find_rewrites, ctx, traced.span, candidates),
             *run_rule(find_user_rewrites, ctx, traced.span, context.user_rules, file.tree)]
    backward: dict[str, str] = {}
    if ctx.example_inputs is not None and not ctx.trace.issues:
        backward = _run_graph_and_module(traced, context, harvested, found)
    elif ctx.trace.issues:
        # nothing else is learnt from a graph known to be wrong
        observe_partial_graph(traced, training=file.settings.tracing.trace_mode == "train")
    fill_node_tables(traced.module_report, gm, backward)
    return found


def _run_graph_and_module(traced: TracedModule, context: FileContext,
                          harvested: dict[int, TracedModule],
                          found: list[Diagnostic]) -> dict[str, str]:
    """Run the graph (its shapes, output signature), then the module (FX014); the
    backward node of each graph node. Diagnostics go into ``found``."""
    ctx, settings = traced.ctx, context.file.settings
    gm, example_inputs = ctx.graph_module, ctx.example_inputs
    assert gm is not None and example_inputs is not None
    training = settings.tracing.trace_mode == "train"
    record_backward = len(gm.graph.nodes) <= _MAX_NODES_FOR_AUTOGRAD
    seen = observe(gm, example_inputs, training=training, record_backward=record_backward)
    if not seen.ok and traced.inputs_inferred:
        # small images first (fast); a model that asserts its own size gets it, one that
        # says none the common size, kept only if it runs there
        own = spatial_size(traced.instance)
        retry = infer_inputs(gm, retry_size(traced.instance))
        again = (observe(gm, retry, training=training, record_backward=record_backward)
                 if retry is not None else None)
        if again is not None and (own is not None or again.ok):
            example_inputs, seen = retry, again
            ctx.example_inputs = retry
    if not seen.ok:
        ran, _ = run_eager(traced.instance, example_inputs, training)
        if ran:  # eager accepts these inputs: the graph is what is wrong
            found += run_rule(rules.graph_failed, ctx, traced.span, traced.span, seen.error)
        elif not _built_from_guesses(traced):  # else fxls's guesses do not fit together
            found.append(_inputs_failed(ctx, traced.span, example_inputs, seen.error))
        return {}
    traced.module_report.output_signature = signature(seen.output)
    wanted = inputs_wanted(traced, harvested)
    if settings.tracing.check_eager or wanted:
        with capturing_inputs(wanted):
            ran, eager = run_eager(traced.instance, example_inputs, training)
        if ran and settings.tracing.check_eager:
            found += run_rule(rules.eager_mismatch, ctx, traced.span, traced.span, eager,
                              seen.output)
    return seen.backward


def _built_from_guesses(traced: TracedModule) -> bool:
    """Inputs and constructor arguments both inferred by fxls: when they do not run, that
    says nothing about the user's code."""
    return traced.inputs_inferred and INFERRED in (traced.module_report.entry or "")


def _inputs_failed(
    ctx: ModuleContext, span: SourceSpan, inputs: tuple[Any, ...], error: str
) -> Diagnostic:
    shown = ", ".join(
        f"tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else type(v).__name__
        for v in inputs)
    return diagnostic(
        "FX015", f"`{ctx.class_name}` could not run on its example inputs ({shown}): {error}; "
        "shapes, backward nodes and the graph-vs-eager check (FX014) are skipped. Give inputs "
        "it accepts with `# fxls: args (torch.randn(...),)` in the class", span, ctx.class_name)
