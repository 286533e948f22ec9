"""Whether the source still reads a value after the statement that computed it.

A trace that took a branch on a stand-in condition saw one path only: a node unused on
that path may be used on the other. The statement that created it tells: its value is
returned, or a name it is bound to is read further down the function.
"""

from __future__ import annotations

import ast
import linecache
from functools import lru_cache

from fxcore.source import SourceSpan


def read_later(span: SourceSpan) -> bool:
    found = _statement_at(span.file, span.line)
    if found is None:
        return False
    function, statement = found
    if isinstance(statement, ast.Return):
        return True
    names = {target.id for target in _targets(statement)}
    if not names:
        return False
    end = statement.end_lineno or statement.lineno
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
               and node.id in names and node.lineno > end for node in ast.walk(function))


def _targets(statement: ast.stmt) -> list[ast.Name]:
    if isinstance(statement, ast.Assign):
        targets: list[ast.expr] = list(statement.targets)
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    else:
        return []
    return [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _statement_at(file: str, line: int) -> tuple[ast.AST, ast.stmt] | None:
    """The innermost function and statement containing ``line`` of ``file``."""
    tree = _tree(file)
    if tree is None:
        return None
    best: tuple[ast.AST, ast.stmt] | None = None

    def visit(node: ast.AST, function: ast.AST | None) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if not hasattr(child, "lineno"):
                continue
            start, end = child.lineno, child.end_lineno or child.lineno  # type: ignore[attr-defined]
            if not start <= line <= end:
                continue
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, child)
            elif isinstance(child, ast.stmt):
                if function is not None:
                    best = (function, child)
                visit(child, function)

    visit(tree, None)
    return best


def _tree(file: str) -> ast.Module | None:
    return _parse("".join(linecache.getlines(file)))


@lru_cache(maxsize=16)
def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None
