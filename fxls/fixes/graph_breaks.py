"""FX301 fixes, each verified by dynamo's run on the edited text:

- ``print(...)`` / ``logging`` / ``logger.info(...)`` / ``warnings.warn(...)`` in ``forward``
  -> run only eagerly, under ``if not torch.compiler.is_compiling():``;
- a call dynamo cannot trace (a builtin, a C extension) inside a function of the user's that
  ``forward`` calls -> that function decorated: ``@torch._dynamo.nonstrict_trace`` (one
  opaque call in the graph: no break, when it takes and returns tensors) or
  ``@torch.compiler.disable`` (it runs eagerly: dynamo's deliberate break at its call, in
  place of a break inside it);
- a branch on a tensor's value -> ``torch.cond`` / ``torch.where`` (``branches``).
"""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.blocks import (
    Function,
    alone_on_lines,
    enclosing_function,
    imports_torch,
    indent_unit,
    indented,
    newline,
    spans_string_lines,
    statements_lines,
)
from fxls.fixes.branches import rewrite_branch
from fxls.fixes.source_map import Located, indentation
from fxls.report import Diagnostic

_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}
#: breaks a decorator on the user's function does not address: dynamo's jump on a tensor
#: (torch.cond), ``.item()`` (a config switch), a function the user already disabled
_NOT_A_CALL_INTO_CODE = ("generic_jump", "Unsupported Tensor.item() call",
                         "Skip calling `torch.compiler.disable()`d function",
                         "Skip inlining `torch.compiler.disable()`d function")
DISABLE = "torch.compiler.disable"
NONSTRICT = "torch._dynamo.nonstrict_trace"


def fix_break(located: Located, diagnostic: Diagnostic) -> list[Fix]:
    stmt = located.stmt
    if stmt is None or not imports_torch(located):
        return []
    gb_type = str(diagnostic.data.get("gb_type", ""))
    if gb_type.startswith("generic_jump"):
        return rewrite_branch(located, diagnostic, "compile")
    if _is_logging(stmt):
        return _only_eagerly(located, stmt, diagnostic)
    if gb_type.startswith(_NOT_A_CALL_INTO_CODE):
        return []
    return _decorated(located, stmt, diagnostic)


def _is_logging(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    func = stmt.value.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    if not isinstance(func, ast.Attribute) or func.attr not in _LOG_METHODS:
        return False
    owner = func.value
    name = owner.id if isinstance(owner, ast.Name) else (
        owner.attr if isinstance(owner, ast.Attribute) else "")
    return name in ("logging", "warnings") or "log" in name.lower()


def _only_eagerly(located: Located, stmt: ast.stmt, diagnostic: Diagnostic) -> list[Fix]:
    function = enclosing_function(located, stmt)
    if function is None or not alone_on_lines(located, stmt) or spans_string_lines(stmt):
        return []
    indent, nl = indentation(located.text, stmt.lineno), newline(located)
    unit = indent_unit(located, function)
    lines = [f"{indent}if not torch.compiler.is_compiling():",
             *indented(statements_lines(located, [stmt]), unit)]
    end = stmt.end_lineno or stmt.lineno
    edit = TextEdit(stmt.lineno, 0, end + 1, 0, nl.join(lines) + nl)
    title = "Run it only eagerly (`if not torch.compiler.is_compiling():`)"
    return [Fix(title, diagnostic.code, [edit], safe=False, tier="compile",
                at=diagnostic.span)]


def _decorated(located: Located, stmt: ast.stmt, diagnostic: Diagnostic) -> list[Fix]:
    """The user's function that holds the call, decorated (never ``forward`` itself: that
    would leave nothing to compile)."""
    function = enclosing_function(located, stmt)
    if function is None or function.name == "forward" or _already_decorated(function):
        return []
    first = min([function.lineno, *(d.lineno for d in function.decorator_list)])
    indent, nl = indentation(located.text, first), newline(located)
    fixes = []
    for decorator, title in (
            (NONSTRICT, f"Trace `{function.name}` as one opaque call (`@{NONSTRICT}`)"),
            (DISABLE, f"Run `{function.name}` eagerly, outside the graph (`@{DISABLE}`)")):
        edit = TextEdit(first, 0, first, 0, f"{indent}@{decorator}{nl}")
        fixes.append(Fix(title, diagnostic.code, [edit], safe=False, tier="compile",
                         at=diagnostic.span))
    return fixes


def _already_decorated(function: Function) -> bool:
    written = {ast.unparse(d.func if isinstance(d, ast.Call) else d)
               for d in function.decorator_list}
    return bool(written & {DISABLE, NONSTRICT, "torch._dynamo.disable"})
