"""Run each pass of a file on fresh copies of real graphs and check what it left.

A *subject* is a graph passes run on: a model the file builds (traced by fxcore), a
``pass_models`` entry of the project, or a representative graph. Each pass gets its own
deep copy (a pass that changes parameters in place cannot disturb the next one, nor the
model's own checks), as a torch.fx GraphModule unless the pass is written against fxcore.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.graph_module import GraphModule as CoreGraphModule
from fxcore.source import SourceSpan, spans_of_traceback
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.passes.checks import Where, lint_graph, unused_nodes
from fxls.analysis.passes.discovery import Flavour, PassKind, PassSpec
from fxls.analysis.passes.edits import EditKind, EditLog
from fxls.report import Diagnostic, NodeInfo, PassGraphRun, PassReport, RelatedInfo

#: a pass whose outputs differ by more than this (relative to the outputs' scale) is FX017
_OUTPUT_TOLERANCE = 1e-4


@dataclass(slots=True)
class Subject:
    label: str
    graph_module: CoreGraphModule
    instance: torch.nn.Module
    example_inputs: Callable[[], tuple[Any, ...] | None]
    #: its graph's node table and code, as each pass finds it (made by the first run)
    before: tuple[dict[str, tuple[str, str, str]], str | None] | None = None


@dataclass(slots=True)
class Outcome:
    """A pass run that completed cleanly, kept for the output comparison (FX017)."""

    spec: PassSpec
    subject: Subject
    result: Any


@dataclass(slots=True)
class PassResults:
    reports: list[PassReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def run_passes(specs: list[PassSpec], subjects: list[Subject], graphs_from: str, log: EditLog,
               is_reportable: Callable[[str], bool]) -> PassResults:
    results = PassResults()
    for spec in specs:
        report = PassReport(spec.name, spec.kind, to_span(spec.span), graphs_from=graphs_from)
        results.reports.append(report)
        for subject in subjects:
            run, found, outcome = _run_one(spec, subject, log, is_reportable)
            if run is None:
                continue
            report.runs.append(run)
            results.diagnostics.extend(found)
            if outcome is not None:
                results.outcomes.append(outcome)
    return results


def _fresh(subject: Subject, flavour: Flavour) -> Any:
    if flavour is Flavour.FXCORE:
        return copy.deepcopy(subject.graph_module)
    from fxcore.interop import to_torch_fx

    return to_torch_fx(copy_modules(subject.graph_module))


def copy_modules(module: torch.nn.Module, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``module``'s tree of submodules with their own parameters and buffers
    (other attributes shared): what a pass may change, several times cheaper than
    ``copy.deepcopy`` (which copies every attribute of ~350 modules generically)."""
    memo = {} if memo is None else memo
    done = memo.get(id(module))
    if done is not None:
        return done
    copied = copy.copy(module)
    memo[id(module)] = copied
    copied._parameters = {
        name: None if p is None else _copied_tensor(p, memo)
        for name, p in module._parameters.items()}
    copied._buffers = {name: None if b is None else _copied_tensor(b, memo)
                       for name, b in module._buffers.items()}
    copied._modules = {name: None if m is None else copy_modules(m, memo)
                       for name, m in module._modules.items()}
    return copied


def _copied_tensor(tensor: torch.Tensor, memo: dict[int, Any]) -> Any:
    done = memo.get(id(tensor))
    if done is None:
        clone = tensor.detach().clone()
        done = memo[id(tensor)] = (torch.nn.Parameter(clone, tensor.requires_grad)
                                   if isinstance(tensor, torch.nn.Parameter) else clone)
    return done


def _run_one(spec: PassSpec, subject: Subject, log: EditLog,
             is_reportable: Callable[[str], bool]
             ) -> tuple[PassGraphRun | None, list[Diagnostic], Outcome | None]:
    where = Where(subject.label, spec.span, is_reportable, spec.name)
    with log.paused():
        try:
            fresh = _fresh(subject, spec.flavour)
            instance = copy_modules(subject.instance) if spec.kind is PassKind.MODULE else None
        except Exception:
            return None, [], None
    inputs = subject.example_inputs() if spec.kind is PassKind.INTERPRETER else None
    if spec.kind is PassKind.INTERPRETER and inputs is None:
        return None, [], None
    before, before_code = _before(subject, fresh.graph)
    mark, calls_mark, traces = log.mark(), len(log.stale_calls), log.traces
    run = PassGraphRun(subject.label, before=before_code)
    try:
        result = _call(spec, fresh, instance, inputs)
    except Exception as error:
        if log.traces == traces and not log.since(mark) and _refused_options(error, spec):
            run.problem = (f"not run: it wants options besides the graph "
                           f"({type(error).__name__}: {error})")
            return run, [], None
        item = _raised(error, spec, subject, is_reportable)
        found = []
        if _raised_by_lint(error):  # the pass's own `graph.lint()`: the cause, not the call
            edited = {id(e.graph): e.graph for e in log.since(mark)}
            for each_graph in edited.values():
                found.extend(lint_graph(each_graph, log, where))
            for each in found:
                each.related.append(RelatedInfo(item.span, "`lint()` raised here"))
        found = found or [item]
        run.problem = found[0].message
        return run, found, None
    graph = _graph_of(result, spec, fresh)
    found: list[Diagnostic] = []
    checked = {id(graph): graph} if graph is not None else {}
    for edit in log.since(mark):
        checked.setdefault(id(edit.graph), edit.graph)
    if graph is not None:
        after = _snapshot(graph)
        run.added = [n for n in after if n not in before or after[n][:2] != before[n][:2]]
        run.removed = [n for n in before if n not in after or after[n][:2] != before[n][:2]]
        run.rewired = [n for n in after if n in before and after[n][:2] == before[n][:2]
                       and after[n][2] != before[n][2]]
        run.after = _code_of(graph)
        run.nodes = _changed_nodes(graph, set(run.added) | set(run.rewired), log, mark)
    for each in checked.values():
        found.extend(lint_graph(each, log, where))
    if graph is not None:
        found.extend(unused_nodes(graph, set(run.added), log, where))
    found.extend(_stale_result(result, spec, log, where))
    found.extend(stale_calls(log, calls_mark, subject.label))
    if found:
        run.problem = found[0].message
    outcome = Outcome(spec, subject, result) if not found else None
    return run, found, outcome


def _before(subject: Subject, graph: Any) -> tuple[dict[str, tuple[str, str, str]], str | None]:
    """The subject's graph as every pass finds it (the same copy each time): once."""
    if subject.before is None:
        subject.before = (_snapshot(graph), _code_of(graph))
    return subject.before


def _call(spec: PassSpec, fresh: Any, instance: Any, inputs: Any) -> Any:
    kind = spec.kind
    args, kwargs = spec.options() if spec.options is not None else ((), {})
    if kind is PassKind.GRAPH_MODULE:
        return spec.target(fresh, *args, **kwargs)
    if kind is PassKind.GRAPH:
        return spec.target(fresh.graph, *args, **kwargs)
    if kind is PassKind.MODULE:
        return spec.target(instance, *args, **kwargs)
    if kind is PassKind.TRANSFORMER:
        return spec.target(fresh).transform()
    if kind is PassKind.INTERPRETER:
        spec.target(fresh).run(*inputs)
        return None
    if kind is PassKind.PASS_BASE:
        return spec.target()(fresh)
    if kind in (PassKind.CLASS, PassKind.INSTANCE):
        runner = spec.target() if kind is PassKind.CLASS else spec.target
        argument = fresh.graph if spec.takes is PassKind.GRAPH else fresh
        return getattr(runner, spec.method or "__call__")(argument, *args, **kwargs)
    return spec.target(fresh)  # a PassManager


_EDITS_IN_PLACE = (PassKind.GRAPH_MODULE, PassKind.PASS_BASE, PassKind.PASS_MANAGER,
                   PassKind.CLASS, PassKind.INSTANCE)


def _graph_module_of(result: Any, spec: PassSpec, fresh: Any) -> Any:
    """The GraphModule a pass hands back (its result, a PassResult's, or the one it edited)."""
    module = getattr(result, "graph_module", result)
    if hasattr(module, "graph") and hasattr(getattr(module, "graph"), "nodes"):
        return module
    if spec.kind in _EDITS_IN_PLACE:
        return fresh
    return None


def _graph_of(result: Any, spec: PassSpec, fresh: Any) -> Any:
    if spec.kind is PassKind.GRAPH or (
            spec.kind in (PassKind.CLASS, PassKind.INSTANCE) and spec.takes is PassKind.GRAPH):
        return result if hasattr(result, "nodes") else fresh.graph
    if spec.kind is PassKind.INTERPRETER:
        return None
    module = _graph_module_of(result, spec, fresh)
    return module.graph if module is not None else None


def _stale_result(result: Any, spec: PassSpec, log: EditLog, where: Where) -> list[Diagnostic]:
    """FX007: a function pass returns a GraphModule whose graph changed after its last
    ``recompile()``: calling it runs the old code."""
    if spec.kind not in (PassKind.GRAPH_MODULE, PassKind.MODULE):
        return []
    module = getattr(result, "graph_module", result)
    if not hasattr(module, "recompile"):
        return []
    stale = log.stale_edit(module)
    if stale is None:
        return []
    span = _return_span(spec) or spec.span
    item = diagnostic(
        "FX007", f"`{spec.name}` returns a GraphModule whose graph changed after its last "
        "`recompile()`: it still runs the old code (call `recompile()` before returning it; "
        f"in the graph of `{where.graph_label}`)", span, spec.name, graph=where.graph_label)
    item.data["pass"] = spec.name
    item.related.append(RelatedInfo(to_span(stale.span), "the first change since the last "
                                    "recompile()"))
    returned = _returned_name(spec)
    if returned is not None:
        item.data["recompile"] = returned
    return [item]


def stale_calls(log: EditLog, start: int, graph_label: str) -> list[Diagnostic]:
    """FX007 at each call of a GraphModule whose graph changed since its last recompile."""
    found = []
    for call in log.stale_calls[start:]:
        item = diagnostic(
            "FX007", "this calls a GraphModule whose graph changed after its last "
            "`recompile()`: it runs the old code (call `recompile()` first; in the graph of "
            f"`{graph_label}`)", call.span, call.pass_name, graph=graph_label)
        item.data["pass"] = call.pass_name
        item.related.append(RelatedInfo(to_span(call.first_change.span),
                                        "the first change since the last recompile()"))
        found.append(item)
    return found


def _last_return(spec: PassSpec) -> ast.Return | None:
    return max(spec.returns, key=lambda r: (r.lineno, r.col_offset), default=None)


def _return_span(spec: PassSpec) -> SourceSpan | None:
    node = _last_return(spec)
    if node is None:
        return None
    return SourceSpan(spec.span.file, node.lineno, node.end_lineno or node.lineno,
                      node.col_offset, node.end_col_offset or node.col_offset)


def _returned_name(spec: PassSpec) -> str | None:
    node = _last_return(spec)
    value = node.value if node is not None else None
    return value.id if isinstance(value, ast.Name) else None


def _raised(error: BaseException, spec: PassSpec, subject: Subject,
            is_reportable: Callable[[str], bool]) -> Diagnostic:
    """FX004 at the pass line that raised (the innermost one of the exception's chain: a
    PassManager re-raises its passes' errors wrapped)."""
    chosen, span = error, None
    for each in _chain(error):
        spans = [s for s in spans_of_traceback(each.__traceback__) if is_reportable(s.file)]
        if spans:
            chosen, span = each, spans[-1]
    text = str(chosen).strip().splitlines()[0] if str(chosen).strip() else ""
    message = f"{type(chosen).__name__}: {text}" if text else type(chosen).__name__
    item = diagnostic(
        "FX004", f"{message} (raised by the pass `{spec.name}` on the graph of "
        f"`{subject.label}`)", span or spec.span, spec.name, kind="exception",
        graph=subject.label)
    item.data["pass"] = spec.name
    return item


def _refused_options(error: BaseException, spec: PassSpec) -> bool:
    """A pass with options raised in its own body before touching any graph: it validated
    its arguments (torchvision's ``create_feature_extractor`` without ``return_nodes``), a
    call fxls made, not a bug of the pass."""
    code = getattr(spec.target, "__code__", None)
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return spec.has_options and tb is not None and tb.tb_frame.f_code is code


def _raised_by_lint(error: BaseException) -> bool:
    """The exception came out of ``Graph.lint`` (torch.fx's or fxcore's)."""
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "lint" and code.co_filename.replace("\\", "/").endswith(
                ("fx/graph.py", "fxcore/graph.py")):
            return True
        tb = tb.tb_next
    return False


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _format(value: Any) -> str:
    if hasattr(value, "op") and hasattr(value, "users") and hasattr(value, "name"):
        return f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(_format(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _target_text(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return repr(target)
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    if module.startswith("torch._C"):
        module = "torch"
    return f"{module}.{name}" if module and module != "builtins" else name


def _snapshot(graph: Any) -> dict[str, tuple[str, str, str]]:
    return {n.name: (n.op, _target_text(n), _format((n.args, n.kwargs))) for n in graph.nodes}


def _code_of(graph: Any) -> str | None:
    try:
        return graph.python_code(root_module="self").src
    except Exception:
        return None


def _changed_nodes(graph: Any, names: set[str], log: EditLog, mark: int) -> list[NodeInfo]:
    """The added and rewired nodes, once per pass line that created or changed each (hover
    on any of those lines shows the node)."""
    lines: dict[int, list[SourceSpan]] = {}
    for edit in log.since(mark):
        if edit.kind is not EditKind.ERASE:
            spans = lines.setdefault(id(edit.node), [])
            if edit.span not in spans:
                spans.append(edit.span)
    found = []
    for node in graph.nodes:
        if node.name not in names:
            continue
        for span in lines.get(id(node), []):
            found.append(NodeInfo(
                node.name, node.op, _target_text(node), _format(node.args),
                _format(node.kwargs), [u.name for u in node.users], to_span(span)))
    return found


def compare_outputs(outcomes: list[Outcome]) -> list[Diagnostic]:
    """FX017: a pass that changes the model's outputs on its example inputs."""
    found = []
    expected: dict[int, list[Any] | None] = {}  # each model's outputs, computed once
    for outcome in outcomes:
        inputs = outcome.subject.example_inputs()
        module = getattr(outcome.result, "graph_module", outcome.result)
        if inputs is None or not isinstance(module, torch.nn.Module):
            continue
        key = id(outcome.subject)
        if key not in expected:
            expected[key] = _outputs(outcome.subject.graph_module, inputs)
        outputs = expected[key]
        difference = None if outputs is None else _max_difference(outputs, module, inputs)
        if difference is None:
            continue
        spec = outcome.spec
        item = diagnostic(
            "FX017", f"`{spec.name}` changes the outputs of `{outcome.subject.label}` on its "
            f"example inputs: the largest absolute difference is {difference:.3g}", spec.span,
            spec.name, graph=outcome.subject.label, difference=difference)
        item.data["pass"] = spec.name
        found.append(item)
    return found


def _outputs(module: Any, inputs: tuple[Any, ...]) -> list[Any] | None:
    from torch.utils._pytree import tree_flatten

    try:
        with torch.no_grad():
            torch.manual_seed(0)
            return tree_flatten(module(*inputs))[0]
    except Exception:
        return None


def _max_difference(expected: list[Any], changed: Any, inputs: tuple[Any, ...]
                    ) -> float | None:
    """The largest absolute difference between the model's outputs and the changed
    module's, when it is more than rounding (None when they agree or it cannot run)."""
    got = _outputs(changed, inputs)
    if got is None or len(expected) != len(got):
        return None
    worst = 0.0
    for left, right in zip(expected, got, strict=True):
        if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)):
            continue
        if left.shape != right.shape or not left.is_floating_point():
            continue
        difference = (left - right.to(left.dtype)).abs().max().item() if left.numel() else 0.0
        scale = 1.0 + left.abs().max().item() if left.numel() else 1.0
        if difference > _OUTPUT_TOLERANCE * scale:
            worst = max(worst, difference)
    return worst or None
