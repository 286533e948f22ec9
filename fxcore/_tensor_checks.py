"""Going on past ``isinstance(proxy, torch.Tensor)`` being False while tracing.

``torch._assert(isinstance(rel_codes, torch.Tensor), ...)`` or ``if isinstance(boxes,
torch.Tensor): ... else: raise ...``: a Proxy is not a Tensor, so torch.fx raises there. The
user's fix makes the check see a tensor. The recovering search retraces with such a statement
marked: inside it (the innermost ``if``/loop/``with``/``try`` around the raising line, else the
statement itself), the model's own ``isinstance`` calls see a traced tensor value as a
``torch.Tensor``. torch's and fxcore's own checks still see a Proxy (only calls made directly
from a marked line of a file outside them are answered so).
"""

from __future__ import annotations

import ast
import linecache

__all__ = ["fix_lines"]

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)

#: file -> (start, end, compound) of each statement
_statements: dict[str, list[tuple[int, int, bool]]] = {}


def fix_lines(file: str, line: int) -> range:
    """The lines where the check is answered for an exception raised at ``line``."""
    if file not in _statements:
        spans: list[tuple[int, int, bool]] = []
        try:
            tree: ast.AST | None = ast.parse("".join(linecache.getlines(file)))
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.stmt) and not isinstance(node, _DEFINITIONS):
                spans.append((node.lineno, node.end_lineno or node.lineno,
                              isinstance(node, _COMPOUND)))
        _statements[file] = spans
    spans = _statements[file]
    around = [(start, end) for start, end, compound in spans if compound and start < line <= end]
    if around:
        start, end = max(around)
        return range(start, end + 1)
    ends = [end for start, end, _ in spans if start == line]
    return range(line, min(ends) + 1 if ends else line + 1)
