"""FX201 fix for a guard on a data-dependent size or value: the assumption export asks for,
``torch._check(n > 2)`` (or ``torch._check_is_size(n)``), on the line after ``n`` is
assigned.

Export cannot decide ``n > 2`` when ``n`` came from ``.item()``; told the answer, it records
it (a runtime assert in the exported program) and takes that branch. Which answer is right
is the example inputs' business: both directions are proposed and verification keeps the
one that holds on them (a check that is false there raises, and the outputs differ).
"""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.blocks import alone_on_lines, enclosing_function, imports_torch, newline
from fxls.fixes.source_map import Located, indentation, segment
from fxls.report import Diagnostic

_NEGATED: dict[type, str] = {ast.Gt: "<=", ast.GtE: "<", ast.Lt: ">=", ast.LtE: ">",
                             ast.Eq: "!=", ast.NotEq: "=="}
_WRITTEN: dict[type, str] = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=",
                             ast.Eq: "==", ast.NotEq: "!="}
#: calls and attributes whose value export only knows symbolically (a size) or not at all
_DATA_READS = {"item", "tolist", "size", "numel", "shape"}
_DATA_FUNCTIONS = {"int", "float", "len"}


def assume(located: Located, diagnostic: Diagnostic) -> list[Fix]:
    """``torch._check(...)`` for each answer of the condition at the span."""
    expr, stmt = located.expr, located.stmt
    if expr is None or stmt is None or not imports_torch(located):
        return []
    function = enclosing_function(located, stmt)
    if function is None or not _decides_a_branch(located, expr):
        return []
    if not is_data_value(located):
        return []  # a tensor condition: no bool to assume (torch.cond / torch.where instead)
    place = _after_assignment(located, expr, function, stmt)
    if place is None:
        return []
    line, indent = place
    fixes = []
    for check, title in _checks(located, expr):
        edit = TextEdit(line, 0, line, 0, f"{indent}{check}{newline(located)}")
        fixes.append(Fix(title, diagnostic.code, [edit], safe=False, tier="export",
                         at=diagnostic.span))
    return fixes


def _decides_a_branch(located: Located, expr: ast.expr) -> bool:
    parent = located.parents.get(expr)
    if isinstance(parent, ast.If | ast.While | ast.IfExp | ast.Assert) and parent.test is expr:
        return True
    return isinstance(expr, ast.Compare) or isinstance(parent, ast.BoolOp | ast.UnaryOp)


def is_data_value(located: Located) -> bool:
    """The expression at the span reads a size or a value taken out of a tensor
    (``.item()``), itself or through a name assigned from one before it: a Python number,
    not a tensor."""
    expr, stmt = located.expr, located.stmt
    function = enclosing_function(located, stmt) if stmt is not None else None
    if expr is None or stmt is None or function is None:
        return False
    if _has_data_read(expr):
        return True
    names = _names(expr)
    return any(_has_data_read(value) for value in _assigned_values(function, names, stmt))


def _has_data_read(node: ast.AST) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in _DATA_READS:
            return True
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                and inner.func.id in _DATA_FUNCTIONS):
            return True
    return False


def _names(expr: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


def _assigned_values(function: ast.AST, names: set[str], stmt: ast.stmt) -> list[ast.expr]:
    return [node.value for node in _assignments(function, names)
            if node.value is not None and (node.end_lineno or node.lineno) < stmt.lineno]


def _assignments(function: ast.AST, names: set[str]) -> list[ast.Assign | ast.AnnAssign]:
    found: list[ast.Assign | ast.AnnAssign] = []
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(target, ast.Name) and target.id in names for target in targets):
            found.append(node)  # type: ignore[arg-type]
    return found


def _after_assignment(located: Located, expr: ast.expr, function: ast.AST,
                      stmt: ast.stmt) -> tuple[int, str] | None:
    """(line to insert at, indentation): after the last assignment of a name the condition
    reads that always runs before it; else before the statement that holds it."""
    around = _ancestors(located, stmt)
    before = [node for node in _assignments(function, _names(expr))
              if (node.end_lineno or node.lineno) < stmt.lineno
              and located.parents.get(node) in around and alone_on_lines(located, node)]
    if before:
        last = max(before, key=lambda node: node.end_lineno or node.lineno)
        return (last.end_lineno or last.lineno) + 1, indentation(located.text, last.lineno)
    text = located.text.line(stmt.lineno)
    if not alone_on_lines(located, stmt) or text.lstrip().startswith("elif"):
        return None
    return stmt.lineno, indentation(located.text, stmt.lineno)


def _ancestors(located: Located, node: ast.AST) -> set[ast.AST]:
    found = set()
    current = located.parents.get(node)
    while current is not None:
        found.add(current)
        current = located.parents.get(current)
    return found


def _checks(located: Located, expr: ast.expr) -> list[tuple[str, str]]:
    """(the check, its title) for the condition and for its negation."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        left = segment(located.text, expr.left)
        right = segment(located.text, expr.comparators[0])
        op = type(expr.ops[0])
        if op not in _WRITTEN:
            return []
        if isinstance(expr.left, ast.Name) and _is_zero(expr.comparators[0]) and op is ast.GtE:
            yes = (f"torch._check_is_size({left})",
                   f"Assume `{left}` is a size for export (`torch._check_is_size`)")
        else:
            yes = _check(f"{left} {_WRITTEN[op]} {right}")
        return [yes, _check(f"{left} {_NEGATED[op]} {right}")]
    if isinstance(expr, ast.Name):
        return [_check(f"{expr.id} != 0"), _check(f"{expr.id} == 0")]
    if (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)
            and isinstance(expr.operand, ast.Name)):
        return [_check(f"{expr.operand.id} == 0"), _check(f"{expr.operand.id} != 0")]
    return []


def _check(condition: str) -> tuple[str, str]:
    return f"torch._check({condition})", f"Assume `{condition}` for export (`torch._check`)"


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0 and not isinstance(
        node.value, bool)
