"""Rules over a traced module: dead code (FX010), in-place on inputs (FX011), baked constants
(FX012), trace-time calls (FX013), graph vs eager (FX014). Each returns diagnostics, never raises.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

import torch

from fxcore.node import Node
from fxcore.recovering import IssueKind
from fxcore.source import SourceSpan
from fxls.analysis.context import ModuleContext, TraceTimeCall
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.liveness import read_later
from fxls.project.source_text import source_text
from fxls.report import Diagnostic, RelatedInfo, Span

_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                    "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
                    "__ilshift__", "__irshift__", "__imatmul__"}
_INPLACE_OPERATORS = {
    getattr(operator, name)
    for name in ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand",
                 "ior", "ixor", "ilshift", "irshift", "imatmul", "setitem")
}


def _contains(outer: SourceSpan, inner: SourceSpan) -> bool:
    return (
        outer.file == inner.file
        and (outer.line, outer.col) <= (inner.line, inner.col)
        and (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col)
    )


def _source_text(ctx: ModuleContext, span: SourceSpan) -> str:
    if span.file != ctx.path:
        return ""
    text = source_text(ctx.source)
    if span.end_line == span.line:
        return text.text_at(span)
    first_line = Span(span.file, span.line, span.line, span.col, text.byte_length(span.line))
    return text.text_at(first_line) + " ..."


def _is_inplace(node: Node) -> bool:
    if node.op == "call_method":
        name = node.target
        return (name.endswith("_") and not name.endswith("__")) or name in _INPLACE_DUNDERS
    if node.op == "call_function":
        if node.target in _INPLACE_OPERATORS:
            return True
        name = getattr(node.target, "__name__", "")
        if name in _INPLACE_DUNDERS:  # Tensor.__setitem__ on a tensor made in forward
            return True
        return name.endswith("_") and not name.endswith("__") and not name.startswith("_")
    return False


def _reportable(ctx: ModuleContext, span: SourceSpan | None) -> bool:
    return span is not None and ctx.is_reportable_file(span.file)


def dead_code(ctx: ModuleContext) -> Iterable[Diagnostic]:
    gm = ctx.graph_module
    if gm is None or any(i.kind is IssueKind.EXCEPTION for i in ctx.trace.issues):
        return []
    call_spans = [c.span for c in ctx.trace_time_calls]
    # a branch taken on a stand-in can leave unused what the other branch uses: then a
    # value the source still reads after computing it is not called dead
    branched = any(i.kind is IssueKind.CONTROL_FLOW for i in ctx.trace.issues)
    found = []
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        if node.users and not all(_unused_item(u) for u in node.users):
            continue
        if _unused_item(node) or _is_size_value(node):
            continue  # taking an item, or Python arithmetic on sizes, costs nothing
        if _from_none_default(node):
            continue  # `past.get_seq_length()` with past=None: eager never computes it
        if node.meta.get("consumed_by_issue") or _is_inplace(node):
            continue
        try:
            if node.is_impure():
                continue
        except Exception:
            continue
        span = node.meta.get("source")
        if not _reportable(ctx, span) or any(_contains(c, span) for c in call_spans):
            continue
        if branched and read_later(span):
            continue
        text = _source_text(ctx, span) or node.name
        found.append(diagnostic(
            "FX010", f"`{text}` is computed but never used: the traced graph computes it "
            "for nothing (dead code)", span, ctx.class_name, node=node.name))
    return found


_SIZE_ATTRIBUTES = {"shape", "ndim", "dtype", "device", "is_cuda"}
_SIZE_METHODS = {"size", "dim", "numel", "stride", "nelement", "ndimension", "get_device"}
_SIZE_OPERATORS = {operator.add, operator.sub, operator.mul, operator.floordiv,
                   operator.truediv, operator.mod, operator.neg, operator.pow, operator.getitem}


def _from_none_default(node: Node) -> bool:
    """Whether ``node`` is computed from a parameter that defaults to None (a placeholder
    only because torch.fx makes every parameter one: the eager call passes nothing)."""
    seen: set[Node] = set()
    todo = list(node.all_input_nodes)
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.op == "placeholder" and current.args == (None,):
            return True
        todo.extend(current.all_input_nodes)
    return False


def _unused_item(node: Node) -> bool:
    return node.op == "call_function" and node.target is operator.getitem and not node.users


def _is_size_value(node: Node, depth: int = 0) -> bool:
    """A value made of tensor sizes by Python arithmetic (``x.shape``, ``B * N``), not tensor
    work."""
    if depth > 16:
        return False
    if node.op == "call_method":
        return node.target in _SIZE_METHODS
    if node.op != "call_function":
        return False
    if node.target is getattr:
        return len(node.args) > 1 and node.args[1] in _SIZE_ATTRIBUTES
    if node.target in _SIZE_OPERATORS:
        inputs = node.all_input_nodes
        return bool(inputs) and all(_is_size_value(n, depth + 1) for n in inputs)
    return False


def inplace_on_inputs(ctx: ModuleContext) -> Iterable[Diagnostic]:
    gm = ctx.graph_module
    if gm is None:
        return []
    found = []
    for node in gm.graph.nodes:
        if not _is_inplace(node) or not node.args or not isinstance(node.args[0], Node):
            continue
        target = node.args[0]
        if target.op == "placeholder":
            what = f"the forward input `{target.target}`"
        elif target.op == "get_attr" and not str(target.target).startswith("_tensor_constant"):
            what = f"`self.{target.target}`"  # (a baked constant is FX012's to report)
        else:
            continue
        span = node.meta.get("source")
        if not _reportable(ctx, span):
            continue
        op_name = node.target if isinstance(node.target, str) else node.target.__name__
        found.append(diagnostic(
            "FX011", f"in-place `{op_name}` modifies {what}: the graph mutates its caller's "
            "tensor, which passes like dead code elimination and quantization do not expect",
            span, ctx.class_name, node=node.name))
    return found


def baked_constants(ctx: ModuleContext, created: dict[int, SourceSpan]) -> Iterable[Diagnostic]:
    gm = ctx.graph_module
    if gm is None:
        return []
    found = []
    if any(i.kind is IssueKind.PYTHON_VALUE for i in ctx.trace.issues):
        return []  # tensors made from stand-in values of recovered problems are artifacts
    issue_lines = {i.span.line for i in ctx.trace.issues if i.span is not None}
    for node in gm.graph.nodes:
        if node.op != "get_attr" or not str(node.target).startswith("_tensor_constant"):
            continue
        value = getattr(gm, node.target, None)
        span = created.get(id(value)) if value is not None else None
        if span is not None and span.line in issue_lines:
            continue  # made from a stand-in value of a recovered problem, not a real constant
        if span is None or not _reportable(ctx, span):
            span = node.meta.get("source")
        if not _reportable(ctx, span):
            continue
        shape = list(value.shape) if isinstance(value, torch.Tensor) else "?"
        found.append(diagnostic(
            "FX012", f"a tensor (shape {shape}) created while tracing is baked into the graph "
            f"as the constant `{node.target}`: it will not follow .to(device) or "
            "state_dict; register it as a buffer", span, ctx.class_name, node=node.name))
    return found


def trace_time_calls(ctx: ModuleContext) -> Iterable[Diagnostic]:
    found = []
    for call in ctx.trace_time_calls:
        where = _call_site(ctx, call)
        if where is None:
            continue
        item = diagnostic(
            "FX013", f"`{call.what}(...)` runs once while tracing and is not part of the graph: "
            "the traced module will never execute it", where, ctx.class_name,
            what=call.what)
        if where != call.span:
            item.related.append(RelatedInfo(to_span(call.span), f"`{call.what}` runs here"))
        found.append(item)
    return found


def _call_site(ctx: ModuleContext, call: TraceTimeCall) -> SourceSpan | None:
    """Where a trace-time call is reported: its own line in the analysed file; for a call
    inside a helper of another file (``logger.warning_once`` in a library's logging module),
    the analysed file's line that reached it."""
    if call.span.file == ctx.path:
        return call.span
    own = [s for s in call.stack if s.file == ctx.path]
    if own:
        return own[-1]
    return call.span if _reportable(ctx, call.span) else None


def outputs_close(a: Any, b: Any) -> bool:
    """Graph and eager outputs agree (rtol 1e-4, atol 1e-5, NaN equal to NaN)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
        return torch.equal(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(outputs_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(outputs_close(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def graph_failed(ctx: ModuleContext, class_span: SourceSpan, error: str) -> Iterable[Diagnostic]:
    """FX014 for a graph that raises on inputs its eager forward accepts."""
    mode = "train" if ctx.settings.tracing.trace_mode == "train" else "eval"
    return [diagnostic(
        "FX014", f"the traced graph of `{ctx.class_name}` raises {error} on inputs its eager "
        f"forward accepts (both in {mode} mode): a decision taken once at trace time (an "
        "`is None` test of an optional argument, `isinstance(x, Tensor)`, a Python value "
        "read off a traced one) is frozen into the graph", class_span, ctx.class_name)]


def eager_mismatch(
    ctx: ModuleContext, class_span: SourceSpan, eager: Any, traced: Any
) -> Iterable[Diagnostic]:
    if outputs_close(eager, traced):
        return []
    mode = "train" if ctx.settings.tracing.trace_mode == "train" else "eval"
    return [diagnostic(
        "FX014", f"the traced graph of `{ctx.class_name}` computes a different result than "
        f"its eager forward on the same inputs (both in {mode} mode): some Python logic was "
        "evaluated once at trace time and frozen into the graph", class_span, ctx.class_name)]
