"""Inlay hints: the tensor shape an assignment in ``forward`` produces (symbolic tracing's,
else the exported program's, whose symbolic sizes are their symbols)."""

from __future__ import annotations

import ast
import os

from fxls.report import FileReport, Span


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


_Shape = list[int | str]
#: a node's span, its shape and the rank of its module in the report
_Found = tuple[Span, _Shape, int]
#: distinct shapes shown on one line (a block used at several resolutions)
_SHAPES_SHOWN = 3


def shape_hints(report: FileReport, path: str, text: str) -> list[tuple[int, int, str]]:
    """(1-based line, byte column after the target, label) for each assignment with a shape.

    The shape is that of the outermost node created by the assigned expression, or what a
    call of a submodule traced through returned (``feats = self.backbone(x)``); a line run
    at several shapes (a block at four resolutions) shows each distinct one.
    """
    resolved = os.path.realpath(path)
    results: list[_Found] = []
    for rank, module in enumerate(report.modules):
        nodes = {n.name: n for n in module.nodes}
        for node in module.nodes:
            if node.span is None or node.shape is None or node.op in ("placeholder", "output"):
                continue
            results.append((node.span, node.shape, rank))
        for call in module.calls:
            outputs = [nodes[n] for n in call.outputs if n in nodes]
            if len(outputs) == 1 and outputs[0].shape is not None:
                results.append((call.span, outputs[0].shape, rank))
    by_line: dict[int, list[_Found]] = {}
    for span, shape, rank in results:
        if os.path.realpath(span.file) == resolved:
            by_line.setdefault(span.line, []).append((span, shape, rank))
    for line, found in _exported_shapes(report, resolved).items():
        by_line.setdefault(line, found)  # where symbolic tracing gave no shape
    # a line traced both in its own class (on guessed inputs) and inside a bigger model
    # shows the bigger model's shapes: they are the ones the program runs at
    size = [m.node_count for m in report.modules]
    hints: dict[tuple[int, int], str] = {}
    for statement in _assignments(text):
        value = statement.value
        assert value is not None
        target = statement.targets[-1] if isinstance(statement, ast.Assign) else statement.target
        if not isinstance(target, ast.Name) or target.end_col_offset is None:
            continue
        found = [
            (span, shape, rank)
            for line in range(value.lineno, (value.end_lineno or value.lineno) + 1)
            for span, shape, rank in by_line.get(line, [])
            if _within(span, value)
        ]
        if not found:
            continue
        biggest = max(size[rank] for _, _, rank in found)
        inside = [(span, shape) for span, shape, rank in found if size[rank] == biggest]
        outermost = max(_extent(span) for span, _ in inside)
        shapes: list[_Shape] = []
        for span, shape in inside:
            if _extent(span) == outermost and shape not in shapes:
                shapes.append(shape)
        labels = [f"[{', '.join(str(d) for d in shape)}]" for shape in shapes[:_SHAPES_SHOWN]]
        if len(shapes) > _SHAPES_SHOWN:
            labels.append("…")
        hints[(target.end_lineno or target.lineno, target.end_col_offset)] = (
            f": {' | '.join(labels)}")
    return [(line, col, label) for (line, col), label in sorted(hints.items())]


def _exported_shapes(report: FileReport, resolved: str) -> dict[int, list[_Found]]:
    """The shapes of the nodes of each module's exported program, by line of the file."""
    by_line: dict[int, list[_Found]] = {}
    for rank, module in enumerate(report.modules):
        graph = module.target_graphs.export if module.target_graphs is not None else None
        for node in graph.nodes if graph is not None else ():
            if node.span is not None and node.shape is not None and \
                    os.path.realpath(node.span.file) == resolved:
                by_line.setdefault(node.span.line, []).append((node.span, node.shape, rank))
    return by_line


def _extent(span: Span) -> tuple[int, int]:
    return (span.end_line - span.line, span.end_col - span.col)


def _within(span: Span, expr: ast.expr) -> bool:
    start = (expr.lineno, expr.col_offset)
    end = (expr.end_lineno or expr.lineno, expr.end_col_offset or 0)
    return start <= (span.line, span.col) and (span.end_line, span.end_col) <= end
