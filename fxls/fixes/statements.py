"""Fixes that remove or rewrite a whole statement: FX010 (dead code), FX013 (trace-time call),
FX011 (in-place op on an input), FX001 on ``assert`` / ``if`` / ternary."""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.blocks import block_of
from fxls.fixes.source_map import Located, extent, indentation, segment


def _alone_on_its_lines(located: Located, stmt: ast.stmt) -> bool:
    line, col, end_line, end_col = extent(stmt)
    first = located.text.line(line).encode("utf-8")
    last = located.text.line(end_line).encode("utf-8")
    before = first[:col].strip()
    after = last[end_col:].split(b"#", 1)[0].strip()
    return not before and not after


def delete_statement(located: Located, stmt: ast.stmt) -> list[TextEdit] | None:
    """Edits deleting ``stmt``'s lines; a ``pass`` keeps a block that would become empty."""
    if not _alone_on_its_lines(located, stmt):
        return None
    line, _, end_line, _ = extent(stmt)
    block = block_of(located, stmt)
    if block is not None and len(block) == 1:
        indent = indentation(located.text, line)
        return [TextEdit(line, 0, end_line + 1, 0, f"{indent}pass\n")]
    return [TextEdit(line, 0, end_line + 1, 0, "")]


def remove_dead_computation(located: Located) -> list[Fix]:
    expr, stmt = located.expr, located.stmt
    if expr is None or stmt is None:
        return []
    is_value = isinstance(stmt, ast.Expr | ast.Assign | ast.AnnAssign) and stmt.value is expr
    if not is_value:
        return []
    edits = delete_statement(located, stmt)
    if edits is None:
        return []
    text = segment(located.text, expr)
    return [Fix(f"Remove unused computation `{_short(text)}`", "FX010", edits)]


def remove_trace_time_call(located: Located) -> list[Fix]:
    expr, stmt = located.expr, located.stmt
    if not isinstance(expr, ast.Call) or not isinstance(stmt, ast.Expr) or stmt.value is not expr:
        return []
    edits = delete_statement(located, stmt)
    if edits is None:
        return []
    text = segment(located.text, expr)
    return [Fix(f"Remove trace-time call `{_short(text)}`", "FX013", edits, safe=False)]


def out_of_place(located: Located) -> list[Fix]:
    expr, stmt = located.expr, located.stmt
    if not isinstance(expr, ast.Call) or stmt is None:
        return []
    func = expr.func
    inplace_kw = next((k for k in expr.keywords if k.arg == "inplace"), None)
    if inplace_kw is not None:
        # F.relu(x, inplace=True) -> F.relu(x)
        _, _, kw_end_line, kw_end_col = extent(inplace_kw.value)
        kw_line, kw_col = inplace_kw.value.lineno, _keyword_start(located, inplace_kw)
        start_line, start_col = _comma_before(located, kw_line, kw_col)
        edit = TextEdit(start_line, start_col, kw_end_line, kw_end_col, "")
        return [Fix("Use the out-of-place form (drop `inplace=True`)", "FX011", [edit])]
    is_inplace_method = isinstance(func, ast.Attribute) and (
        func.attr.endswith("_") and not func.attr.startswith("_")
    )
    if not is_inplace_method:
        return []
    assert isinstance(func, ast.Attribute)
    receiver = func.value
    out_name = func.attr[:-1]
    call_text = segment(located.text, expr)
    receiver_text = segment(located.text, receiver)
    new_call = receiver_text + "." + out_name + call_text[len(receiver_text) + 1 + len(func.attr) :]
    if isinstance(stmt, ast.Expr) and stmt.value is expr and isinstance(receiver, ast.Name):
        line, col, end_line, end_col = extent(expr)
        edit = TextEdit(line, col, end_line, end_col, f"{receiver.id} = {new_call}")
        return [Fix(f"Use out-of-place `{out_name}` and rebind `{receiver.id}`", "FX011", [edit])]
    return []


def _keyword_start(located: Located, keyword: ast.keyword) -> int:
    line = located.text.line(keyword.value.lineno).encode("utf-8")
    name = (keyword.arg or "").encode("utf-8")
    return line.rfind(name, 0, keyword.value.col_offset)


def _comma_before(located: Located, line: int, col: int) -> tuple[int, int]:
    text = located.text.line(line).encode("utf-8")
    index = text.rfind(b",", 0, col)
    return (line, index) if index >= 0 else (line, col)


def assert_to_torch_assert(located: Located) -> list[Fix]:
    stmt = located.stmt
    if not isinstance(stmt, ast.Assert) or located.expr is not stmt.test:
        return []
    if not _has_torch(located):
        return []
    test = segment(located.text, stmt.test)
    message = segment(located.text, stmt.msg) if stmt.msg is not None else repr(f"failed: {test}")
    line, col, end_line, end_col = extent(stmt)
    edit = TextEdit(line, col, end_line, end_col, f"torch._assert({test}, {message})")
    return [Fix("Replace `assert` with `torch._assert` (traceable)", "FX001", [edit])]


def branch_to_where(located: Located) -> list[Fix]:
    expr, stmt = located.expr, located.stmt
    if expr is None or not _has_torch(located):
        return []
    parent = located.parents.get(expr)
    if isinstance(parent, ast.IfExp) and parent.test is expr:
        cond = segment(located.text, parent.test)
        a, b = segment(located.text, parent.body), segment(located.text, parent.orelse)
        line, col, end_line, end_col = extent(parent)
        edit = TextEdit(line, col, end_line, end_col, f"torch.where({cond}, {a}, {b})")
        return [Fix("Replace the conditional expression with `torch.where`", "FX001", [edit])]
    if not isinstance(stmt, ast.If) or stmt.test is not expr:
        return []
    then_name, then_value = _single_assignment(stmt.body)
    if then_name is None:
        return []
    if stmt.orelse:
        else_name, else_value = _single_assignment(stmt.orelse)
        if else_name != then_name:
            return []
        otherwise = segment(located.text, else_value)
    else:
        otherwise = then_name
    cond = segment(located.text, stmt.test)
    then_text = segment(located.text, then_value)
    line, col, end_line, _ = extent(stmt)
    indent = indentation(located.text, line)
    new = f"{indent}{then_name} = torch.where({cond}, {then_text}, {otherwise})\n"
    edit = TextEdit(line, 0, end_line + 1, 0, new)
    return [Fix(f"Compute `{then_name}` with `torch.where` instead of branching", "FX001", [edit])]


def _single_assignment(block: list[ast.stmt]) -> tuple[str | None, ast.expr]:
    if len(block) == 1 and isinstance(block[0], ast.Assign):
        (target,) = block[0].targets if len(block[0].targets) == 1 else (None,)
        if isinstance(target, ast.Name):
            return target.id, block[0].value
    return None, ast.Constant(None)


def _has_torch(located: Located) -> bool:
    for node in located.tree.body:
        if isinstance(node, ast.Import) and any(
            (a.asname or a.name) == "torch" for a in node.names
        ):
            return True
    return False


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
