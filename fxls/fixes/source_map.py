"""Finding the Python syntax a diagnostic's span points at."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from fxls.report import Span


@dataclass(slots=True)
class Located:
    tree: ast.Module
    lines: list[str]
    #: innermost expression whose extent equals the span (None if none matches exactly)
    expr: ast.expr | None
    #: the innermost statement containing the span
    stmt: ast.stmt | None
    #: parents of every node, for walking outwards
    parents: dict[ast.AST, ast.AST]


def _extent(node: ast.AST) -> tuple[int, int, int, int]:
    return (
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        node.end_col_offset or 0,  # type: ignore[attr-defined]
    )


def _contains(outer: tuple[int, int, int, int], inner: tuple[int, int, int, int]) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (
        outer[2],
        outer[3],
    )


def locate(source: str, span: Span) -> Located | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    parents: dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    target = (span.line, span.col, span.end_line, span.end_col)
    expr: ast.expr | None = None
    stmt: ast.stmt | None = None
    for node in ast.walk(tree):
        if not hasattr(node, "lineno"):
            continue
        extent = _extent(node)
        if (
            isinstance(node, ast.expr)
            and extent == target
            and (expr is None or _contains(_extent(expr), extent))
        ):
            expr = node
        if (
            isinstance(node, ast.stmt)
            and _contains(extent, target)
            and (stmt is None or _contains(_extent(stmt), extent))
        ):
            stmt = node
    return Located(tree, source.splitlines(), expr, stmt, parents)


def segment(source_lines: list[str], node: ast.AST) -> str:
    """The exact source text of ``node``."""
    line, col, end_line, end_col = _extent(node)
    if line == end_line:
        return source_lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8")
    first = source_lines[line - 1].encode("utf-8")[col:].decode("utf-8")
    middle = source_lines[line : end_line - 1]
    last = source_lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8")
    return "\n".join([first, *middle, last])


def indentation(source_lines: list[str], line: int) -> str:
    text = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
    return text[: len(text) - len(text.lstrip())]


def extent(node: ast.AST) -> tuple[int, int, int, int]:
    return _extent(node)
