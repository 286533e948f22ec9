"""FX003 fixes: ``len(t)`` / ``int(t)`` / ``float(t)`` of a traced value, kept symbolic."""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.source_map import Located, extent, segment

_SYMBOLIC_SIZE_METHODS = {"size", "numel", "dim"}


def _is_size_expression(node: ast.expr) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in _SYMBOLIC_SIZE_METHODS
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
        return node.value.attr == "shape"
    return isinstance(node, ast.Attribute) and node.attr == "ndim"


def keep_symbolic(located: Located) -> list[Fix]:
    call = located.expr
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return []
    if len(call.args) != 1 or call.keywords:
        return []
    (argument,) = call.args
    name = call.func.id
    line, col, end_line, end_col = extent(call)
    arg_text = segment(located.text, argument)
    if name == "len":
        edit = TextEdit(line, col, end_line, end_col, f"{arg_text}.size(0)")
        return [Fix(f"Use `{arg_text}.size(0)` (stays in the graph)", "FX003", [edit])]
    if name in ("int", "float") and _is_size_expression(argument):
        edit = TextEdit(line, col, end_line, end_col, arg_text)
        return [Fix(f"Drop `{name}(...)`: `{arg_text}` is traced as a value", "FX003", [edit])]
    return []
