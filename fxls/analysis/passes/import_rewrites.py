"""Rewrites the file runs at import on a GraphModule bound to a global: a module-level
``subgraph_rewriter.replace_pattern(traced, pattern, replacement)``, a graph edited in place,
``fused = Fuser(traced).transform()``. FX017 at the module-level statement that ran the
rewrite when the result computes something else than the graph it was made from.

The graph before is the file's own unedited GraphModule the result was made from (``traced``
of ``fused = fuse(traced)``), else the trace call the file made, run again: on the module the
file kept (``fx.symbolic_trace(model)``), or on one built again (``fx.symbolic_trace(Net())``)
given the rewritten module's weights. Both run with the file's own values (the rewrite already
ran on them), with ``output_check``'s comparison."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.passes.checks import Where
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.passes.edits import Edit, EditLog
from fxls.analysis.passes.output_check import Outcome, compared, run_outputs
from fxls.analysis.passes.parameters import TRACE_CALLS, PassKind, call_name
from fxls.analysis.passes.runner import Subject
from fxls.report import Diagnostic

_MAX_CHAIN = 8


def rewrites_at_import(tree: ast.Module, namespace: dict[str, Any], log: EditLog,
                       filename: str, is_reportable: Callable[[str], bool]) -> list[Diagnostic]:
    bound = _module_level_values(tree)
    found: list[Diagnostic] = []
    for name, value in list(namespace.items()):
        state = log.graph_state(getattr(value, "graph", None)) if _is_graph_module(value) else None
        if state is None or not state.edits or log.stale_edit(value) is not None:
            continue
        before, label = _graph_before(name, value, bound, namespace, log, filename)
        inputs = _inputs(before) if before is not None else None
        if inputs is None:
            continue
        statement = _statement_of(tree, state.edits[0])
        if statement is None:
            continue
        span = SourceSpan(filename, statement.lineno, statement.end_lineno or statement.lineno,
                          statement.col_offset, statement.end_col_offset or 0)
        rewrite = _rewrite_name(statement, state.edits[0])
        spec = PassSpec(rewrite, PassKind.GRAPH_MODULE, None, span)
        expected = run_outputs(before, inputs)[0]
        if expected is None:
            continue
        # the file's own values, not realistic ones: the rewrite ran on these (a conv-bn
        # fusion at import folded the batch norm the file had)
        outcome = Outcome(spec, Subject(label, before, before, lambda inputs=inputs: inputs),
                          value, log, Where(label, span, is_reportable, rewrite))
        found.extend(_named_for(statement, rewrite, compared(outcome, expected, value, inputs)))
    return found


def _named_for(statement: ast.stmt, rewrite: str, found: list[Diagnostic]) -> list[Diagnostic]:
    """Edits made by a block of module-level code (a loop over the nodes), not by one call:
    the message says so instead of naming one of its calls."""
    if _single_call(statement) is not None:
        return found
    for item in found:
        item.message = item.message.replace(f"`{rewrite}` changes",
                                            "the graph edits of this statement change", 1)
    return found


def _single_call(statement: ast.stmt) -> ast.Call | None:
    """The call a statement is (``f(...)``, ``x = f(...)``), else None."""
    value = getattr(statement, "value", None)
    return value if isinstance(statement, ast.Expr | ast.Assign | ast.AnnAssign) and isinstance(
        value, ast.Call) else None


def graphs_before_rewrites(tree: ast.Module, namespace: dict[str, Any], log: EditLog,
                           filename: str) -> list[tuple[str, Any]]:
    """Each global GraphModule the file rewrote at import, as its trace call made it (the
    trace run again): the file's own graph, for its passes to run on."""
    bound = _module_level_values(tree)
    found = []
    for name, value in list(namespace.items()):
        if not _is_graph_module(value) or name.startswith("_") or log.graph_state(
                value.graph) is None or not isinstance(bound.get(name), ast.Call):
            continue
        if call_name(bound[name]) in TRACE_CALLS:
            before = _traced_again(bound[name], value, namespace, filename)
            if before is not None:
                found.append((name, before))
    return found


def _is_graph_module(value: Any) -> bool:
    import torch.fx

    from fxcore.graph_module import GraphModule

    return isinstance(value, torch.fx.GraphModule | GraphModule)


def _module_level_values(tree: ast.Module) -> dict[str, ast.expr]:
    """name -> the expression first assigned to it at module level."""
    found: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            found.setdefault(target.id, value)
    return found


def _graph_before(name: str, value: Any, bound: dict[str, ast.expr],
                  namespace: dict[str, Any], log: EditLog, filename: str) -> tuple[Any, str]:
    """The graph ``name`` was before the rewrites, and the global it is the graph of."""
    for _ in range(_MAX_CHAIN):
        expression = bound.get(name)
        if not isinstance(expression, ast.Call):
            return None, name
        if call_name(expression) in TRACE_CALLS:
            return _traced_again(expression, value, namespace, filename), name
        source = _first_argument(expression)
        if source is None or not _is_graph_module(namespace.get(source)):
            return None, name
        if source != name and log.graph_state(namespace[source].graph) is None:
            return namespace[source], source  # the file's unedited GraphModule it was made from
        name = source
    return None, name


def _first_argument(call: ast.Call) -> str | None:
    """``traced`` of ``fuse(traced)`` and of ``Fuser(traced).transform()``."""
    while True:
        if call.args and isinstance(call.args[0], ast.Name):
            return call.args[0].id
        inner = call.func.value if isinstance(call.func, ast.Attribute) else None
        if not isinstance(inner, ast.Call):
            return None
        call = inner


def _traced_again(call: ast.Call, rewritten: Any, namespace: dict[str, Any],
                  filename: str) -> Any:
    try:
        torch.manual_seed(0)
        before = eval(compile(ast.Expression(call), filename, "eval"), namespace)
        if not _is_graph_module(before):
            return None
        if not (call.args and isinstance(call.args[0], ast.Name)):
            before.load_state_dict(rewritten.state_dict(), strict=False)
    except Exception:
        return None
    return before


def _inputs(before: Any) -> tuple[Any, ...] | None:
    from fxls.analysis.inputs import infer_inputs

    try:
        torch.manual_seed(0)
        return infer_inputs(before)
    except Exception:
        return None


def _statement_of(tree: ast.Module, edit: Edit) -> ast.stmt | None:
    """The module-level statement that made ``edit``: the one at its line, or the one that
    calls the file's function that made it."""
    statements = [s for s in tree.body
                  if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    if edit.pass_name == "<module>":
        return next((s for s in statements
                     if s.lineno <= edit.span.line <= (s.end_lineno or s.lineno)), None)
    caller = edit.pass_name.split(".")[0]
    return next((s for s in statements if any(
        isinstance(n, ast.Call) and call_name(n) == caller for n in ast.walk(s))), None)


def _rewrite_name(statement: ast.stmt, edit: Edit) -> str:
    """The function that made the edit, else the statement's call: the class of
    ``Cls(traced).transform()``, ``replace_pattern`` of ``replace_pattern(traced, ...)``."""
    if edit.pass_name != "<module>":
        return edit.pass_name
    call = _single_call(statement)
    while call is not None and isinstance(call.func, ast.Attribute) and isinstance(
            call.func.value, ast.Call):
        call = call.func.value
    return call_name(call) if call is not None and call_name(call) else "<module>"
