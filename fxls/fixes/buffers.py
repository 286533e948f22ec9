"""FX012 fix: a tensor built in ``forward`` from constants becomes a registered buffer."""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.source_map import Located, extent, indentation, segment


def _enclosing(located: Located, node: ast.AST, kind: type) -> ast.AST | None:
    current = located.parents.get(node)
    while current is not None and not isinstance(current, kind):
        current = located.parents.get(current)
    return current


def _free_names(expr: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def register_buffer(located: Located) -> list[Fix]:
    expr = located.expr
    if not isinstance(expr, ast.Call):
        return []
    forward = _enclosing(located, expr, ast.FunctionDef)
    cls = _enclosing(located, forward, ast.ClassDef) if forward is not None else None
    if not isinstance(forward, ast.FunctionDef) or not isinstance(cls, ast.ClassDef):
        return []
    local_names = {a.arg for a in forward.args.args} | {
        t.id
        for n in ast.walk(forward)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    if _free_names(expr) & local_names:
        return []  # depends on forward's values: it is not a constant
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None or not init.body:
        return []
    stmt = located.stmt
    name = "constant"
    if (
        isinstance(stmt, ast.Assign)
        and stmt.value is expr
        and isinstance(stmt.targets[0], ast.Name)
    ):
        name = stmt.targets[0].id
    anchor = init.body[0]
    for child in init.body:
        if "super" in ast.unparse(child) and "__init__" in ast.unparse(child):
            anchor = child
    end_line = anchor.end_lineno or anchor.lineno
    indent = indentation(located.text, anchor.lineno)
    expr_text = segment(located.text, expr)
    insert = TextEdit(
        end_line + 1,
        0,
        end_line + 1,
        0,
        f'{indent}self.register_buffer("{name}", {expr_text}, persistent=False)\n',
    )
    line, col, end, end_col = extent(expr)
    use = TextEdit(line, col, end, end_col, f"self.{name}")
    title = f"Register `{name}` as a buffer (built once in __init__, not baked in)"
    return [Fix(title, "FX012", [insert, use], safe=False)]


def apply_rewrite(located: Located, replacement: str | None, rule: str | None) -> list[Fix]:
    """FX020: replace the matched expression by the rule's replacement text."""
    if not replacement or located.expr is None:
        return []
    line, col, end_line, end_col = extent(located.expr)
    edit = TextEdit(line, col, end_line, end_col, replacement)
    return [Fix(f"Rewrite to `{replacement}`" + (f" ({rule})" if rule else ""), "FX020", [edit])]
