"""Whole statements as lines of text: where they sit, their indentation, moving them into a
new block. What the export and compile fixes need to wrap or rewrite statements."""

from __future__ import annotations

import ast

from fxls.fixes.source_map import Located, extent, indentation

Function = ast.FunctionDef | ast.AsyncFunctionDef


def newline(located: Located) -> str:
    return "\r\n" if "\r\n" in located.text.text else "\n"


def alone_on_lines(located: Located, stmt: ast.stmt) -> bool:
    """Nothing but ``stmt`` (and a comment) on its first and last lines."""
    line, col, end_line, end_col = extent(stmt)
    before = located.text.line(line).encode("utf-8")[:col]
    after = located.text.line(end_line).encode("utf-8")[end_col:].split(b"#", 1)[0]
    return not before.strip() and not after.strip()


def indent_unit(located: Located, block_owner: ast.stmt) -> str:
    """One level of indentation as the file writes it below ``block_owner`` (``def``,
    ``if``...), four spaces when that cannot be read off."""
    body = getattr(block_owner, "body", None)
    if not body:
        return "    "
    outer = indentation(located.text, block_owner.lineno)
    inner = indentation(located.text, body[0].lineno)
    return inner[len(outer):] if inner.startswith(outer) and len(inner) > len(outer) else "    "


def line_block(located: Located, first: int, last: int) -> list[str]:
    """Lines ``first``..``last`` (1-based, inclusive), without their line breaks."""
    return [located.text.line(number) for number in range(first, last + 1)]


def statements_lines(located: Located, block: list[ast.stmt]) -> list[str]:
    """The lines of consecutive statements, comments between them included."""
    return line_block(located, block[0].lineno, block[-1].end_lineno or block[-1].lineno)


def indented(lines: list[str], extra: str) -> list[str]:
    """``lines`` one level deeper (blank lines stay blank)."""
    return [extra + line if line.strip() else line for line in lines]


def spans_string_lines(node: ast.AST) -> bool:
    """A string literal inside ``node`` runs over several lines: re-indenting the lines
    would change its text."""
    return any(isinstance(inner, ast.Constant) and isinstance(inner.value, str | bytes)
               and (inner.end_lineno or inner.lineno) > inner.lineno
               for inner in ast.walk(node))


def enclosing_function(located: Located, node: ast.AST) -> Function | None:
    current = located.parents.get(node)
    while current is not None and not isinstance(current, Function):
        current = located.parents.get(current)
    return current


def block_of(located: Located, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statement list ``stmt`` belongs to."""
    parent = located.parents.get(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            return block
    return None


def imports_torch(located: Located) -> bool:
    return any(isinstance(node, ast.Import)
               and any((alias.asname or alias.name) == "torch" for alias in node.names)
               for node in located.tree.body)


def unused_name(function: ast.AST, wanted: str) -> str:
    """``wanted``, or ``wanted_2``... when ``function`` already uses that name."""
    taken = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    taken |= {node.name for node in ast.walk(function) if isinstance(node, Function)}
    taken |= {node.arg for node in ast.walk(function) if isinstance(node, ast.arg)}
    name, number = wanted, 1
    while name in taken:
        number += 1
        name = f"{wanted}_{number}"
    return name


def own_nodes(statements: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``statements``, not of the functions, classes or lambdas defined in them."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        found.append(node)
        if not isinstance(node, Function | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return found
