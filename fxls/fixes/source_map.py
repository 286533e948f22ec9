"""Finding the Python syntax a diagnostic's span points at."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from fxls.project.source_text import SourceText, source_text
from fxls.report import Span


@dataclass(slots=True)
class Located:
    tree: ast.Module
    text: SourceText
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
    except (SyntaxError, ValueError, MemoryError, RecursionError):
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
    return Located(tree, source_text(source), expr, stmt, parents)


def segment(text: SourceText, node: ast.AST) -> str:
    """The exact source text of ``node``."""
    line, col, end_line, end_col = _extent(node)
    return text.text_at(Span("", line, end_line, col, end_col))


def indentation(text: SourceText, line: int) -> str:
    content = text.line(line)
    return content[: len(content) - len(content.lstrip())]


def extent(node: ast.AST) -> tuple[int, int, int, int]:
    return _extent(node)
