"""Run each pass of a file on fresh copies of real graphs and check what it left.

A *subject* is a graph passes run on: a model the file builds (traced by fxcore), a
``pass_models`` entry of the project, or a representative graph. Each pass gets its own
deep copy (a pass that changes parameters in place cannot disturb the next one, nor the
model's own checks), as a torch.fx GraphModule unless the pass is written against fxcore.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from fxcore.graph_module import GraphModule as CoreGraphModule
from fxcore.node import Node as CoreNode
from fxcore.source import SourceSpan, spans_of_traceback
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.passes.checks import Where, in_graph, lint_graph, unused_nodes
from fxls.analysis.passes.discovery import Flavour, PassKind, PassSpec
from fxls.analysis.passes.edits import EditKind, EditLog
from fxls.analysis.passes.module_copies import (
    copy_modules,
    give_realistic_values,
    realistic_copy,
)
from fxls.analysis.passes.module_swaps import modules_by_path, swapped_modules
from fxls.analysis.passes.output_check import Outcome
from fxls.analysis.passes.output_check import compare_outputs as compare_outputs
from fxls.analysis.passes.user_objects import attribute
from fxls.report import Diagnostic, NodeInfo, PassGraphRun, PassReport, RelatedInfo


@dataclass(slots=True)
class Subject:
    label: str
    #: fxcore's graph module (torch.fx's for an export graph, with ``fresh_copy``)
    graph_module: CoreGraphModule | torch.fx.GraphModule
    instance: torch.nn.Module
    example_inputs: Callable[[], tuple[Any, ...] | None]
    #: a graph already in torch.fx (torch.export's): a fresh copy of it, in the form the
    #: passes take (an ExportedProgram, its graph module, the module it unlifts)
    fresh_copy: Callable[[], Any] | None = None
    #: its graph's node table and code, as each pass finds it (made by the first run)
    before: tuple[dict[str, tuple[str, str, str]], str | None] | None = None
    #: the names of its graph's nodes that something uses (made by the first run)
    used: set[str] = field(default_factory=set)


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
    """The subject's graph module for one pass, with the values of its instance made
    realistic (``module_copies``)."""
    if subject.fresh_copy is not None:
        return subject.fresh_copy()
    copied = realistic_copy(subject.graph_module, subject.instance,
                            deep=flavour is Flavour.FXCORE)
    if flavour is Flavour.FXCORE:
        return copied
    from fxcore.interop import to_torch_fx

    return to_torch_fx(copied)


def _run_one(spec: PassSpec, subject: Subject, log: EditLog,
             is_reportable: Callable[[str], bool]
             ) -> tuple[PassGraphRun | None, list[Diagnostic], Outcome | None]:
    where = Where(subject.label, spec.span, is_reportable, spec.name)
    with log.paused():
        try:
            fresh = _fresh(subject, spec.flavour)
            instance = (give_realistic_values(copy_modules(subject.instance))
                        if spec.kind is PassKind.MODULE else None)
        except Exception:
            return None, [], None
    inputs = subject.example_inputs() if spec.kind is PassKind.INTERPRETER else None
    if spec.kind is PassKind.INTERPRETER and inputs is None:
        return None, [], None
    before_code = _before(subject, fresh.graph)
    mark, calls_mark, traces = log.mark(), len(log.stale_calls), log.traces
    run = PassGraphRun(subject.label, before=before_code)
    modules_before = modules_by_path(instance if instance is not None else fresh)
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
    found = _checked_result(result, spec, fresh, subject, log, where, mark, run)
    module, graph = _graph_module_of(result, spec, fresh), _graph_of(result, spec, fresh)
    if graph is not None:
        run.swapped = swapped_modules(modules_before, module if module is not None else fresh,
                                      graph)
    found.extend(stale_calls(log, calls_mark, subject.label))
    if found:
        run.problem = found[0].message
    if subject.fresh_copy is not None and not found:
        result = _module_to_run(result, fresh)
    outcome = Outcome(spec, subject, result, log, where, run) if not found else None
    return run, found, outcome


def _module_to_run(result: Any, fresh: Any) -> Any:
    """What runs after a pass on an export graph: the module it returned, else the one it
    changed in place, recompiled: what runs next makes its code from the graph (Inductor
    after its passes, ``ep.module()``)."""
    module = attribute(result, "graph_module", result)
    is_program = attribute(result, "graph_signature") is not None
    if isinstance(module, torch.nn.Module) and not is_program:
        return module
    owner = result if is_program else fresh  # an ExportedProgram's
    module = attribute(owner, "graph_module", owner)
    if isinstance(module, torch.fx.GraphModule):
        module.recompile()
    return module


def _checked_result(result: Any, spec: PassSpec, fresh: Any, subject: Subject, log: EditLog,
                    where: Where, mark: int, run: PassGraphRun) -> list[Diagnostic]:
    """What the pass left: the graph it returns or left in place (after a final
    ``legalize_graph`` too: the graphs a ``gm.graph = ...`` replaced are not checked), every
    other graph it edited, and what it left unused; ``run`` gets the changes."""
    graph = _graph_of(result, spec, fresh)
    found: list[Diagnostic] = []
    checked = {id(graph): graph} if graph is not None else {}
    for edit in log.since(mark):
        checked.setdefault(id(edit.graph), edit.graph)
    if graph is not None:
        _describe_changes(run, subject, graph, log, mark)
    for each in checked.values():
        found.extend(lint_graph(each, log, where))
    if graph is not None:  # in a graph that fails lint, unused nodes follow from that
        used = subject.used if not found else set()
        found.extend(unused_nodes(graph, set(run.added), log, where, used))
    found.extend(_stale_result(result, spec, log, where))
    return found


def _describe_changes(run: PassGraphRun, subject: Subject, graph: Any, log: EditLog,
                      mark: int) -> None:
    before = subject.before[0] if subject.before is not None else {}
    after = _snapshot(graph)
    run.added = [n for n in after if n not in before or after[n][:2] != before[n][:2]]
    run.removed = [n for n in before if n not in after or after[n][:2] != before[n][:2]]
    run.rewired = [n for n in after if n in before and after[n][:2] == before[n][:2]
                   and after[n][2] != before[n][2]]
    run.after = _code_of(graph)
    run.nodes = _changed_nodes(graph, set(run.added) | set(run.rewired), log, mark)


def _before(subject: Subject, graph: Any) -> str | None:
    """The subject's graph as every pass finds it (the same copy each time), once: its
    node table, the nodes that have users, and its code (returned)."""
    if subject.before is None:
        subject.before = (_snapshot(graph), _code_of(graph))
        subject.used = {node.name for node in graph.nodes if node.users}
    return subject.before[1]


def _call(spec: PassSpec, fresh: Any, instance: Any, inputs: Any) -> Any:
    kind = spec.kind
    args, kwargs = spec.options() if spec.options is not None else ((), {})
    if kind in (PassKind.GRAPH_MODULE, PassKind.EXPORTED_PROGRAM):
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
        made_with, made_with_keywords = spec.construct() if spec.construct else ((), {})
        runner = spec.target(*made_with, **made_with_keywords) if (
            kind is PassKind.CLASS) else spec.target
        argument = fresh.graph if spec.takes is PassKind.GRAPH else fresh
        return getattr(runner, spec.method or "__call__")(argument, *args, **kwargs)
    return spec.target(fresh)  # a PassManager


_EDITS_IN_PLACE = (PassKind.GRAPH_MODULE, PassKind.PASS_BASE, PassKind.PASS_MANAGER,
                   PassKind.CLASS, PassKind.INSTANCE, PassKind.EXPORTED_PROGRAM)


def _graph_module_of(result: Any, spec: PassSpec, fresh: Any) -> Any:
    """The GraphModule a pass hands back (its result, a PassResult's, or the one it edited)."""
    module = attribute(result, "graph_module", result)
    if attribute(attribute(module, "graph"), "nodes") is not None:
        return module
    if spec.kind in _EDITS_IN_PLACE:
        return fresh
    return None


def _graph_of(result: Any, spec: PassSpec, fresh: Any) -> Any:
    if spec.kind is PassKind.GRAPH or (
            spec.kind in (PassKind.CLASS, PassKind.INSTANCE) and spec.takes is PassKind.GRAPH):
        return result if attribute(result, "nodes") is not None else fresh.graph
    if spec.kind is PassKind.INTERPRETER:
        return None
    module = _graph_module_of(result, spec, fresh)
    return module.graph if module is not None else None


def _stale_result(result: Any, spec: PassSpec, log: EditLog, where: Where) -> list[Diagnostic]:
    """FX007: a function pass returns a GraphModule whose graph changed after its last
    ``recompile()``: calling it runs the old code."""
    if spec.kind not in (PassKind.GRAPH_MODULE, PassKind.MODULE):
        return []
    module = attribute(result, "graph_module", result)
    if attribute(module, "recompile") is None:
        return []
    stale = log.stale_edit(module)
    if stale is None:
        return []
    span = _return_span(spec) or spec.span
    item = diagnostic(
        "FX007", f"`{spec.name}` returns a GraphModule whose graph changed after its last "
        "`recompile()`: it still runs the old code (call `recompile()` before returning it; "
        f"{in_graph(where.graph_label)})", span, spec.name, graph=where.graph_label)
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
            "`recompile()`: it runs the old code (call `recompile()` first; "
            f"{in_graph(graph_label)})", call.span, call.pass_name, graph=graph_label)
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
        "FX004", f"{message} (raised by the pass `{spec.name}` "
        f"{in_graph(subject.label, 'on')})", span or spec.span, spec.name, kind="exception",
        graph=subject.label)
    item.data["pass"] = spec.name
    return item


def _refused_options(error: BaseException, spec: PassSpec) -> bool:
    """A pass with options raised in its own body before touching any graph: it validated
    its arguments (torchvision's ``create_feature_extractor`` without ``return_nodes``), a
    call fxls made, not a bug of the pass (of a class pass: in the method it runs by or in
    its constructor)."""
    functions = [spec.target] if spec.method is None else [
        attribute(spec.target, spec.method), attribute(spec.target, "__init__")]
    codes = {id(attribute(attribute(f, "__func__", f), "__code__")) for f in functions}
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return spec.has_options and tb is not None and id(tb.tb_frame.f_code) in codes


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
    if isinstance(value, torch.fx.Node | CoreNode):
        return f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(_format(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v)}" for k, v in value.items()) + "}"
    try:
        return repr(value)
    except Exception:  # a constant of the user's whose __repr__ raises
        return f"<{type(value).__name__}>"


def _target_text(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return str(target)  # ``aten.relu.default``, as torch prints it
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
    on any of those lines shows the node; a copy's lines include its original's: after a
    final ``legalize_graph`` the node is where the pass made it)."""
    found = []
    for node in graph.nodes:
        if node.name not in names:
            continue
        spans: list[SourceSpan] = []
        for edit in log.node_edits(node):
            if edit.seq >= mark and edit.kind is not EditKind.ERASE and edit.span not in spans:
                spans.append(edit.span)
        for span in spans:
            found.append(NodeInfo(
                node.name, node.op, _target_text(node), _format(node.args),
                _format(node.kwargs), [u.name for u in node.users], to_span(span)))
    return found
