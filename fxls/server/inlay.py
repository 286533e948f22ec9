"""Inlay hints: the tensor shape an assignment in ``forward`` produces."""

from __future__ import annotations

import ast
from pathlib import Path

from fxls.report import FileReport, NodeInfo


def _assignments(text: str) -> list[ast.Assign | ast.AnnAssign | ast.AugAssign]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None
    ]


def shape_hints(report: FileReport, path: str, text: str) -> list[tuple[int, int, str]]:
    """(1-based line, byte column after the target, label) for each assignment with a shape.

    The shape is that of the last node created inside the assigned expression.
    """
    resolved = str(Path(path).resolve())
    nodes_by_line: dict[int, list[NodeInfo]] = {}
    for module in report.modules:
        for node in module.nodes:
            if node.span is None or node.shape is None or node.op in ("placeholder", "output"):
                continue
            if str(Path(node.span.file).resolve()) != resolved:
                continue
            nodes_by_line.setdefault(node.span.line, []).append(node)
    hints: dict[tuple[int, int], str] = {}
    for statement in _assignments(text):
        value = statement.value
        assert value is not None
        target = statement.targets[-1] if isinstance(statement, ast.Assign) else statement.target
        if not isinstance(target, ast.Name) or target.end_col_offset is None:
            continue
        inside = [
            n
            for line in range(value.lineno, (value.end_lineno or value.lineno) + 1)
            for n in nodes_by_line.get(line, [])
            if _within(n, value)
        ]
        if not inside:
            continue
        node = inside[-1]
        shape = node.shape or []
        label = f": [{', '.join(str(d) for d in shape)}]"
        hints[(target.end_lineno or target.lineno, target.end_col_offset)] = label
    return [(line, col, label) for (line, col), label in sorted(hints.items())]


def _within(node: NodeInfo, expr: ast.expr) -> bool:
    span = node.span
    assert span is not None
    start = (expr.lineno, expr.col_offset)
    end = (expr.end_lineno or expr.lineno, expr.end_col_offset or 0)
    return start <= (span.line, span.col) and (span.end_line, span.end_col) <= end
