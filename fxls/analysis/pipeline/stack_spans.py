"""Where in the analysed file a node of a graph torch made (export's ATen program, a dynamo
subgraph) came from, read from the node's ``stack_trace``.

Dynamo and strict export print Python 3.11's positions as carets under each frame's line: the
expression is exact. Non-strict export (the default) gives the line only: the expression is
then found on that line's syntax tree by what made the node (the torch function in
``torch_fn``, the submodule called from the line in ``nn_module_stack``, the library function
entered from it), else the line's statement stands for it.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from fxls.analysis.diagnostics import to_span
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.user_frames import statement_span
from fxls.report import Span

_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<function>.+)$')
_CARETS = re.compile(r"^(?P<lead>\s*)[~^]+\s*$")
#: how traceback prints a frame's code line: indented by four, its own indent stripped
_CODE_INDENT = 4


@dataclass(frozen=True)
class Frame:
    """One frame of a printed stack; ``cols`` are the carets' characters in the line's
    stripped text, when the stack has them."""

    file: str
    line: int
    function: str
    cols: tuple[int, int] | None = None


def frames_of(stack_trace: str | None) -> list[Frame]:
    """The frames of a node's ``stack_trace``, outermost first."""
    frames: list[Frame] = []
    rows = (stack_trace or "").split("\n")
    for index, row in enumerate(rows):
        match = _FRAME.match(row)
        if match is None:
            continue
        carets = _CARETS.match(rows[index + 2]) if index + 2 < len(rows) else None
        cols = None
        if carets is not None and index + 1 < len(rows):
            start = len(carets["lead"]) - _CODE_INDENT
            cols = (start, start + len(rows[index + 2].strip()))
        frames.append(Frame(match["file"], int(match["line"]), match["function"], cols))
    return frames


#: the names an operator's torch function goes by (``y * 2`` is ``mul``)
_OPERATORS: dict[type, tuple[str, ...]] = {
    ast.Add: ("add",), ast.Sub: ("sub", "rsub"), ast.Mult: ("mul",),
    ast.Div: ("div", "truediv", "true_divide"), ast.FloorDiv: ("floor_divide", "floordiv"),
    ast.Mod: ("remainder", "fmod", "mod"), ast.Pow: ("pow",), ast.MatMult: ("matmul",),
    ast.BitAnd: ("bitwise_and", "and_"), ast.BitOr: ("bitwise_or", "or_"),
    ast.BitXor: ("bitwise_xor", "xor"), ast.LShift: ("bitwise_left_shift", "lshift"),
    ast.RShift: ("bitwise_right_shift", "rshift"), ast.USub: ("neg",),
    ast.Invert: ("bitwise_not",), ast.Not: ("logical_not",),
    ast.Gt: ("gt",), ast.Lt: ("lt",), ast.GtE: ("ge",), ast.LtE: ("le",), ast.Eq: ("eq",),
    ast.NotEq: ("ne",),
}
_INDEXING = ("__getitem__", "getitem", "index", "select", "slice")


def _names(node: ast.AST) -> tuple[str, ...]:
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        return (name,) if name else ()
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return _OPERATORS.get(type(node.op), ())
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _OPERATORS.get(type(node.ops[0]), ())
    if isinstance(node, ast.Subscript):
        return _INDEXING
    return ()


def _in_order(node: ast.AST) -> list[ast.AST]:
    """The expressions under ``node`` in the order Python evaluates them (operands first)."""
    found: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        found.extend(_in_order(child))
    found.append(node)
    return found


@dataclass
class NodePlaces:
    """Places the nodes of one graph: the file's expressions by line (built as asked), and
    which torch call of a line each name's occurrences stood for."""

    file: SourceFile
    _lines: dict[int, list[ast.AST]] | None = None
    _calls: dict[tuple[int, str], dict[str, int]] = field(default_factory=dict)
    _frames: dict[str, list[Frame]] = field(default_factory=dict)

    def span(self, meta: dict[str, Any]) -> Span | None:
        """The analysed file's expression that made a node with this ``meta``; None when no
        frame of its stack is in the file."""
        stack_trace = meta.get("stack_trace")
        frames = self._frames.get(stack_trace) if isinstance(stack_trace, str) else None
        if frames is None:  # nodes of one line share their stack: read it once
            frames = frames_of(stack_trace)
            if isinstance(stack_trace, str):
                self._frames[stack_trace] = frames
        mine = [i for i, frame in enumerate(frames) if frame.file == self.file.filename]
        if not mine:
            return None
        frame = frames[mine[-1]]
        if frame.cols is not None:
            exact = self._at_carets(frame)
            if exact is not None:
                return exact
        callee = frames[mine[-1] + 1] if mine[-1] + 1 < len(frames) else None
        found = self._called(frame, callee, meta) if callee is not None else \
            self._by_torch_function(frame, meta.get("torch_fn"))
        if found is not None:
            return _expression_span(self.file.filename, found)
        return to_span(statement_span(frame.file, frame.line, frame.function, self.file))

    def _at_carets(self, frame: Frame) -> Span | None:
        assert frame.cols is not None
        text = self.file.text
        if not 1 <= frame.line <= text.line_count:
            return None
        row = text.line(frame.line)
        indent = len(row) - len(row.lstrip())
        start, end = (indent + col for col in frame.cols)
        col = text.char_to_byte_col(frame.line, start)
        if end >= len(row):  # carets to the line's end: the expression may go on
            longer = [node for node in self._expressions(frame.line) if node.col_offset == col]
            if longer:
                return _expression_span(self.file.filename, max(
                    longer, key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0)))
        return Span(self.file.filename, frame.line, frame.line, col,
                    text.char_to_byte_col(frame.line, end))

    def _called(self, frame: Frame, callee: Frame, meta: dict[str, Any]) -> ast.AST | None:
        """The call on the frame's line into the code that made the node: a submodule
        (``self.lin(x)``, named by ``nn_module_stack``) or a function by its name."""
        paths = [str(value[0]) for value in (meta.get("nn_module_stack") or {}).values()
                 if isinstance(value, tuple) and value]
        wanted = [qualified_path(path).rsplit(".", 1)[-1] for path in reversed(paths)] \
            if callee.function in ("forward", "_call_impl") else [callee.function]
        for name in wanted:
            calls = [node for node in self._expressions(frame.line)
                     if isinstance(node, ast.Call) and name in _names(node)]
            if calls:
                return calls[0]
        return None

    def _by_torch_function(self, frame: Frame, torch_fn: Any) -> ast.AST | None:
        """The expression of the line whose name is the torch function's; the k-th call of
        a name met on the line is its k-th expression of that name (a line run many times
        starts again)."""
        if not (isinstance(torch_fn, tuple) and len(torch_fn) == 2):
            return None
        call_id, qualified = str(torch_fn[0]), str(torch_fn[1])
        name = qualified.rsplit(".", 1)[-1]
        candidates = [node for node in self._expressions(frame.line)
                      if name in _names(node) or name.rstrip("_") in _names(node)]
        if not candidates:
            return None
        seen = self._calls.setdefault((frame.line, name), {})
        index = seen.setdefault(call_id, len(seen))
        return candidates[index % len(candidates)]

    def _expressions(self, line: int) -> list[ast.AST]:
        """The expressions starting on ``line``, in the order they run."""
        if self._lines is None:
            self._lines = {}
            tree = self.file.tree
            for node in _in_order(tree) if tree is not None else ():
                if isinstance(node, ast.expr):
                    self._lines.setdefault(node.lineno, []).append(node)
        return self._lines.get(line, [])


_DYNAMO_ROOT = re.compile(r"^L\['self'\]\.?")
_DYNAMO_STEP = re.compile(r"\._modules\['([^']+)'\]|\[(\d+)\]|\['([^']+)'\]")


@functools.lru_cache(maxsize=4096)  # a model's few hundred paths, met on every node
def qualified_path(path: str) -> str:
    """``L['self'].blocks[0].fc1`` -> ``blocks.0.fc1`` (export's paths are already so)."""
    path = _DYNAMO_ROOT.sub("", path)
    path = _DYNAMO_STEP.sub(lambda m: "." + next(g for g in m.groups() if g), path)
    return path.strip(".")


def _expression_span(filename: str, node: ast.AST) -> Span:
    assert isinstance(node, ast.expr)
    return Span(filename, node.lineno, node.end_lineno or node.lineno, node.col_offset,
                node.end_col_offset or 0)
