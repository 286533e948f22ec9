"""FX201 (and FX301 at a branch on a tensor) fixes: an ``if`` on a tensor's value, whose
branches compute tensors, rewritten so that export and dynamo trace both sides.

- ``torch.where(pred, a, b)`` when each branch is one expression (assigned to the same
  name, or returned): both are computed and one is chosen per element, so it is offered
  only when the outputs on the example inputs stay the same (a branch with a side effect,
  or of another shape, changes them);
- ``torch.cond(pred, true_fn, false_fn, operands)`` otherwise: each branch becomes a nested
  function of the locals it reads, returning the names the code after the ``if`` reads (or
  what the branch returns).
"""

from __future__ import annotations

import ast
import dataclasses

from fxls.fixes import statements
from fxls.fixes.assumptions import is_data_value
from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.blocks import (
    Function,
    alone_on_lines,
    block_of,
    enclosing_function,
    imports_torch,
    indent_unit,
    indented,
    newline,
    own_nodes,
    spans_string_lines,
    statements_lines,
    unused_name,
)
from fxls.fixes.source_map import Located, indentation, segment
from fxls.report import Diagnostic

_LEAVES_THE_BRANCH = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Break, ast.Continue,
                      ast.Global, ast.Nonlocal)


def rewrite_branch(located: Located, diagnostic: Diagnostic, tier: str) -> list[Fix]:
    expr, stmt = located.expr, located.stmt
    if expr is None or stmt is None or not imports_torch(located):
        return []
    found: list[Fix] = []
    if not is_data_value(located):  # torch.where chooses by a tensor, not a Python bool
        found += [*statements.branch_to_where(located), *_returned_where(located)]
    if isinstance(stmt, ast.If) and stmt.test is expr:
        found += _cond(located, stmt)
    return [dataclasses.replace(fix, code=diagnostic.code, safe=False, tier=tier,
                                at=diagnostic.span) for fix in found]


def _returned_where(located: Located) -> list[Fix]:
    """``if c: return a`` / ``else: return b`` (or ``return b`` after the ``if``) ->
    ``return torch.where(c, a, b)``."""
    stmt = located.stmt
    if not isinstance(stmt, ast.If) or stmt.test is not located.expr:
        return []
    then = _single_return(stmt.body)
    otherwise = _single_return(stmt.orelse) if stmt.orelse else _next_return(located, stmt)
    if then is None or otherwise is None or not alone_on_lines(located, stmt):
        return []
    if not alone_on_lines(located, otherwise):
        return []
    text = located.text
    cond, a, b = (segment(text, node) for node in (stmt.test, then.value, otherwise.value))
    indent = indentation(text, stmt.lineno)
    end = otherwise.end_lineno or otherwise.lineno
    new = f"{indent}return torch.where({cond}, {a}, {b}){newline(located)}"
    edit = TextEdit(stmt.lineno, 0, end + 1, 0, new)
    return [Fix("Return `torch.where(...)` of both branches instead of branching",
                "FX201", [edit])]


def _single_return(block: list[ast.stmt]) -> ast.Return | None:
    if len(block) == 1 and isinstance(block[0], ast.Return) and block[0].value is not None:
        return block[0]
    return None


def _next_return(located: Located, stmt: ast.stmt) -> ast.Return | None:
    block = block_of(located, stmt)
    if block is None or block[-1] is stmt:
        return None
    following = block[block.index(stmt) + 1]
    return following if isinstance(following, ast.Return) and following.value else None


# -- torch.cond -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Branches:
    """The two sides of the ``if`` as statement lists, and where the rewrite ends."""

    then: list[ast.stmt]
    otherwise: list[ast.stmt]
    #: the ``else`` side is the rest of the function (``if c: return a`` then more code)
    rest_of_function: bool
    last_line: int


def _cond(located: Located, stmt: ast.If) -> list[Fix]:
    function = enclosing_function(located, stmt)
    branches = _branches(located, stmt, function)
    if function is None or branches is None or not alone_on_lines(located, stmt):
        return []
    if not all(_starts_its_line(located, block[0]) for block in (branches.then,
                                                                  branches.otherwise)):
        return []  # `if c: y = a` on one line: the branch has no lines of its own to move
    returns = _ends_with_return(branches.then) and _ends_with_return(branches.otherwise)
    if _leaves(branches.then, allow_return=returns) or _leaves(
            branches.otherwise, allow_return=returns):
        return []
    outputs = [] if returns else _outputs(function, branches)
    if not returns and not outputs:
        return []
    operands = _operands(function, stmt, branches)
    return [_cond_fix(located, stmt, function, branches, operands, outputs)]


def _branches(located: Located, stmt: ast.If, function: Function | None) -> _Branches | None:
    if stmt.orelse:
        first_else = located.text.line(stmt.orelse[0].lineno).lstrip()
        if first_else.startswith("elif"):
            return None
        last = stmt.orelse[-1]
        return _Branches(stmt.body, stmt.orelse, False, last.end_lineno or last.lineno)
    block = block_of(located, stmt)
    if function is None or block is not function.body or block[-1] is stmt:
        return None
    if not _ends_with_return(stmt.body):
        return None
    rest = block[block.index(stmt) + 1:]
    if not _ends_with_return(rest) or any(spans_string_lines(node) for node in rest):
        return None
    return _Branches(stmt.body, rest, True, rest[-1].end_lineno or rest[-1].lineno)


def _starts_its_line(located: Located, stmt: ast.stmt) -> bool:
    return not located.text.line(stmt.lineno).encode("utf-8")[:stmt.col_offset].strip()


def _ends_with_return(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], ast.Return) and block[-1].value is not None


def _leaves(block: list[ast.stmt], allow_return: bool = False) -> bool:
    """Control leaves the branch other than by falling off its end (or, when the branch
    is returned, by a ``return``): a nested function could not do the same."""
    for node in own_nodes(block):
        if isinstance(node, ast.Return) and allow_return:
            continue
        if isinstance(node, _LEAVES_THE_BRANCH):
            return True
    return False


def _stored(block: list[ast.stmt]) -> set[str]:
    return {node.id for node in own_nodes(block)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def _loaded(nodes: list[ast.AST]) -> list[str]:
    """Names read, in the order they first appear."""
    names = [node for node in nodes if isinstance(node, ast.Name)
             and isinstance(node.ctx, ast.Load)]
    names.sort(key=lambda node: (node.lineno, node.col_offset))
    return list(dict.fromkeys(node.id for node in names))


def _outputs(function: Function, branches: _Branches) -> list[str]:
    """The names both branches assign that the code after the ``if`` reads; none when a
    name only one branch assigns is read after it (the other side would keep its old
    value, which a branch function cannot return)."""
    after = [node for node in own_nodes(function.body)
             if getattr(node, "lineno", 0) > branches.last_line]
    read_after = set(_loaded(after))
    then, otherwise = _stored(branches.then), _stored(branches.otherwise)
    if (then ^ otherwise) & read_after:
        return []
    return sorted(then & otherwise & read_after)


def _operands(function: Function, stmt: ast.If, branches: _Branches) -> list[str]:
    """The locals defined before the ``if`` that a branch reads (``self`` is reached as a
    closure: the branches call the module's layers)."""
    args = function.args
    defined = {arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    defined |= {node.id for node in own_nodes(function.body)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                and node.lineno < stmt.lineno}
    read = _loaded(own_nodes(branches.then) + own_nodes(branches.otherwise))
    return [name for name in read if name in defined and name not in ("self", "cls")]


def _cond_fix(located: Located, stmt: ast.If, function: Function, branches: _Branches,
              operands: list[str], outputs: list[str]) -> Fix:
    indent, unit, nl = indentation(located.text, stmt.lineno), indent_unit(located, stmt), \
        newline(located)
    true_fn, false_fn = unused_name(function, "true_fn"), unused_name(function, "false_fn")
    params = ", ".join(operands)
    returned = [f"{indent}{unit}return {', '.join(outputs)}"] if outputs else []
    otherwise = statements_lines(located, branches.otherwise)
    if branches.rest_of_function:
        otherwise = indented(otherwise, unit)
    packed = f"({params},)" if len(operands) == 1 else f"({params})"
    call = f"torch.cond({segment(located.text, stmt.test)}, {true_fn}, {false_fn}, {packed})"
    lines = [f"{indent}def {true_fn}({params}):", *statements_lines(located, branches.then),
             *returned, "", f"{indent}def {false_fn}({params}):", *otherwise, *returned, "",
             f"{indent}{', '.join(outputs)} = {call}" if outputs else f"{indent}return {call}"]
    edit = TextEdit(stmt.lineno, 0, branches.last_line + 1, 0, nl.join(lines) + nl)
    title = "Rewrite the branch with `torch.cond` (both branches traced, one runs)"
    return Fix(title, "FX201", [edit])
