"""Fixes for problems in FX pass code (``fxls.analysis.passes``), from the diagnostic's
``data``: FX005 under ``inserting_before`` (insert after the anchor instead), FX007 at a
``return`` of a stale GraphModule (recompile first), FX010 for a node a pass added that
nothing uses (``eliminate_dead_code()`` at the end of the pass)."""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.blocks import own_nodes
from fxls.fixes.source_map import Located, extent, indentation, segment

_Function = ast.FunctionDef | ast.AsyncFunctionDef
_BEFORE, _AFTER = "inserting_before", "inserting_after"
#: methods of a Graph (not of a GraphModule): a name they are called on is a graph
_GRAPH_METHODS = {"nodes", "inserting_before", "inserting_after", "call_function",
                  "call_method", "call_module", "create_node", "node_copy", "erase_node",
                  "placeholder", "output", "get_attr", "lint", "eliminate_dead_code"}


# -- FX005: inserting_before(anchor) -> inserting_after(anchor) -------------------------------
def insert_after_anchor(located: Located, pass_name: str, line: int) -> list[Fix]:
    """Rename the ``inserting_before`` of the innermost ``with ....inserting_*(...)`` whose
    body holds ``line`` (the line that created the node) to ``inserting_after``; when
    ``line`` is in a helper the pass calls, of the one ``with`` around those calls."""
    call = _governing_insertion(located.tree, line) or _around_helper_calls(
        located, pass_name, line)
    if call is None or not isinstance(call.func, ast.Attribute) or call.func.attr != _BEFORE:
        return []
    _, _, end_line, end_col = extent(call.func)
    start = end_col - len(_BEFORE)
    if located.text.line(end_line).encode("utf-8")[start:end_col] != _BEFORE.encode():
        return []
    anchor = segment(located.text, call.args[0]) if call.args else "the anchor"
    title = f"Insert after `{anchor}` instead of before it (`{_AFTER}`)"
    return [Fix(title, "FX005", [TextEdit(end_line, start, end_line, end_col, _AFTER)])]


def _around_helper_calls(located: Located, pass_name: str, line: int) -> ast.Call | None:
    """The ``inserting_*`` call governing every call the pass makes of the helper function
    that holds ``line`` (None unless there is exactly one)."""
    helper = _innermost_function(located.tree, line)
    pass_function = _by_qualname(located.tree, _qualname_parts(pass_name))
    if helper is None or pass_function is None or helper is pass_function:
        return None
    governing = set()
    for node in own_nodes(pass_function.body):
        if isinstance(node, ast.Call) and _called_name(node) == helper.name:
            call = _governing_insertion(pass_function, node.lineno)
            governing.add(call)
    found = [call for call in governing if call is not None]
    return found[0] if len(governing) == 1 and found else None


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _governing_insertion(tree: ast.AST, line: int) -> ast.Call | None:
    """The ``inserting_before/after`` call of the innermost ``with`` around ``line``."""
    best: tuple[int, ast.Call] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.With | ast.AsyncWith) or not node.body:
            continue
        if not node.body[0].lineno <= line <= (node.end_lineno or node.lineno):
            continue
        for item in node.items:
            expr = item.context_expr
            if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
                    and expr.func.attr in (_BEFORE, _AFTER)
                    and (best is None or node.lineno >= best[0])):
                best = (node.lineno, expr)
    return best[1] if best is not None else None


# -- FX007: recompile before returning ----------------------------------------------------------
def recompile_before_return(located: Located, name: str) -> list[Fix]:
    """``<name>.recompile()`` on its own line before the ``return <name>`` the span is on."""
    stmt = located.stmt
    if not (isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name)
            and stmt.value.id == name and name.isidentifier()):
        return []
    edit = _line_before(located, stmt, [f"{name}.recompile()"])
    if edit is None:
        return []
    return [Fix(f"Call `{name}.recompile()` before returning", "FX007", [edit])]


# -- FX010: eliminate_dead_code at the end of the pass ------------------------------------------
def eliminate_dead_code(located: Located, pass_name: str, line: int) -> list[Fix]:
    """``<gm>.graph.eliminate_dead_code()`` (then ``<gm>.recompile()``) before the pass's last
    ``return``, or at the end of its body; ``<graph>.eliminate_dead_code()`` for a Graph."""
    function = _function(located, pass_name, line)
    if function is None:
        return []
    last = _last_return(function)
    name = _graph_owner(function, last)
    if name is None:
        return []
    is_graph = _is_graph(function, name, last)
    graph = name if is_graph else f"{name}.graph"
    lines = [f"{graph}.eliminate_dead_code()"]
    if last is None:
        edit = _line_after_body(located, function, lines + ([] if is_graph else
                                                            [f"{name}.recompile()"]))
    else:
        before = _previous_sibling(located, last)
        if is_graph:
            edit = _line_before(located, last, lines)
        elif before is not None and _is_recompile(before, name):
            edit = _line_before(located, before, lines)  # its recompile() then comes after
        else:
            edit = _line_before(located, last, [*lines, f"{name}.recompile()"])
    if edit is None:
        return []
    return [Fix(f"Remove the pass's unused nodes with `{graph}.eliminate_dead_code()`",
                "FX010", [edit])]


def _function(located: Located, pass_name: str, line: int) -> _Function | None:
    """The pass function named ``pass_name`` (a qualified name), else the innermost
    function around ``line``."""
    named = _by_qualname(located.tree, _qualname_parts(pass_name))
    return named if named is not None else _innermost_function(located.tree, line)


def _innermost_function(tree: ast.AST, line: int) -> _Function | None:
    around = [n for n in ast.walk(tree) if isinstance(n, _Function)
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    return max(around, key=lambda n: n.lineno, default=None)


def _qualname_parts(qualname: str) -> list[str]:
    return [part for part in qualname.split(".") if part != "<locals>"]


def _by_qualname(scope: ast.AST, parts: list[str]) -> _Function | None:
    if not parts:
        return None
    for child in getattr(scope, "body", []):
        if isinstance(child, _Function | ast.ClassDef) and child.name == parts[0]:
            if len(parts) == 1:
                return child if isinstance(child, _Function) else None
            return _by_qualname(child, parts[1:])
    return None


def _last_return(function: _Function) -> ast.Return | None:
    returns = [n for n in own_nodes(function.body) if isinstance(n, ast.Return)]
    return max(returns, key=lambda r: (r.lineno, r.col_offset), default=None)


def _graph_owner(function: _Function, last: ast.Return | None) -> str | None:
    """The name of the GraphModule (or Graph) the pass hands back: the name its last
    ``return`` returns when the pass uses it as one (``traced`` of a module-to-module pass),
    else its first parameter (after ``self``/``cls`` of a method)."""
    params = [*function.args.posonlyargs, *function.args.args]
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    if last is not None and isinstance(last.value, ast.Name):
        returned = last.value.id
        if _attributes_of(function, returned) & (_GRAPH_METHODS | {"graph", "recompile"}):
            return returned
    return params[0].arg if params else None


def _attributes_of(function: _Function, name: str) -> set[str]:
    """The attributes ``function`` reads of the name ``name`` (``gm.graph``: graph)."""
    return {n.attr for n in own_nodes(function.body) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == name}


def _is_graph(function: _Function, name: str, last: ast.Return | None) -> bool:
    """Is ``name`` a Graph rather than a GraphModule? By its annotation, else by its use."""
    annotation = next((a.annotation for a in [*function.args.posonlyargs, *function.args.args,
                                              *function.args.kwonlyargs] if a.arg == name), None)
    if annotation is None and last is not None and isinstance(last.value, ast.Name):
        annotation = function.returns
    if annotation is not None:
        text = ast.unparse(annotation).strip("'\"")
        if text.rsplit(".", 1)[-1] == "Graph":
            return True
        if text.rsplit(".", 1)[-1] == "GraphModule":
            return False
    uses = _attributes_of(function, name)
    return "graph" not in uses and bool(uses & _GRAPH_METHODS)


def _is_recompile(stmt: ast.stmt, name: str) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "recompile" and isinstance(call.func.value, ast.Name)
            and call.func.value.id == name)


def _previous_sibling(located: Located, stmt: ast.stmt) -> ast.stmt | None:
    parent = located.parents.get(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            index = block.index(stmt)
            return block[index - 1] if index > 0 else None
    return None


# -- inserting whole lines ----------------------------------------------------------------------
def _starts_its_line(located: Located, stmt: ast.stmt) -> bool:
    line, col, _, _ = extent(stmt)
    return not located.text.line(line).encode("utf-8")[:col].strip()


def _newline(located: Located) -> str:
    return "\r\n" if "\r\n" in located.text.text else "\n"


def _line_before(located: Located, stmt: ast.stmt, lines: list[str]) -> TextEdit | None:
    """Insert ``lines`` before ``stmt``, at its indentation (``stmt`` must start its line)."""
    if not _starts_its_line(located, stmt):
        return None
    indent, newline = indentation(located.text, stmt.lineno), _newline(located)
    block = "".join(f"{indent}{text}{newline}" for text in lines)
    return TextEdit(stmt.lineno, 0, stmt.lineno, 0, block)


def _line_after_body(located: Located, function: _Function, lines: list[str]
                     ) -> TextEdit | None:
    """Append ``lines`` to ``function``'s body, at the indentation of its statements."""
    first, last = function.body[0], function.body[-1]
    if first.lineno == function.lineno or not _starts_its_line(located, first):
        return None  # a one-line `def f(g): ...`
    indent, newline = indentation(located.text, first.lineno), _newline(located)
    end_line = last.end_lineno or last.lineno
    block = "".join(f"{indent}{text}{newline}" for text in lines)
    if end_line >= located.text.line_count:  # the body ends the file, without a newline
        end_col = len(located.text.line(end_line).encode("utf-8"))
        return TextEdit(end_line, end_col, end_line, end_col, newline + block[: -len(newline)])
    return TextEdit(end_line + 1, 0, end_line + 1, 0, block)
