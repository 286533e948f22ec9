"""Where a failure torch reports is shown to the user: the innermost frame of a stack that
the user can edit (inside the workspace roots), on the exact expression, with the frames
further in (library code, torch) and further out as related information.

Stacks come from three places, all turned into ``SourceSpan``s here: a traceback (export's
exceptions), dynamo's ``FrameSummary`` lists (graph breaks, strict export) and
``draft_export``'s structured frames (a line, no column: the statement's expression is
found in the file's syntax tree).
"""

from __future__ import annotations

import ast
import os
import re
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

import fxcore
import fxls
from fxcore.source import SourceSpan, spans_of_traceback
from fxls.analysis.diagnostics import to_span
from fxls.analysis.library_names import library_function
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.torch_words import without_resume_names
from fxls.report import RelatedInfo, Span

_TORCH_FOLDER = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
_TORCH_LAYERS = os.path.join(_TORCH_FOLDER, "nn") + os.sep
_MODULE_CALL = os.path.join(_TORCH_LAYERS, "modules", "module.py")
_OWN_FOLDERS = tuple(os.path.dirname(os.path.realpath(package.__file__)) + os.sep
                     for package in (fxls, fxcore))


@dataclass(frozen=True)
class Location:
    """Where a failure is reported, and the chain that explains it."""

    span: SourceSpan
    related: tuple[RelatedInfo, ...] = field(default=())
    #: the library function the failure happened in, when no frame of it is the user's
    library: str | None = None
    #: the innermost library frame, when ``library`` is set
    library_site: SourceSpan | None = None


def spans_of_summaries(frames: Iterable[traceback.FrameSummary],
                       file: SourceFile) -> list[SourceSpan]:
    """Dynamo's frames (outermost first) as spans; a frame without columns gets the
    expression of its line from the file's syntax tree."""
    spans = []
    for frame in frames:
        line = frame.lineno or 0
        end_line = _end_line(frame, file)
        if end_line is not None:
            spans.append(SourceSpan(frame.filename, line, end_line, frame.colno or 0,
                                    frame.end_colno or 0, frame.name))
        else:
            spans.append(statement_span(frame.filename, line, frame.name, file))
    return spans


def _end_line(frame: traceback.FrameSummary, file: SourceFile) -> int | None:
    """The last line of the frame's expression; None when its columns make no span. Dynamo
    gives the columns of an instruction but not its last line (``FrameSummary`` then says
    the first): an end before the start is an expression over several lines, whose last
    line the file's syntax tree has."""
    line, col, end_col = frame.lineno or 0, frame.colno, frame.end_colno
    if col is None or end_col is None:
        return None
    if (frame.end_lineno or line) > line or end_col >= col:
        return frame.end_lineno or line
    tree = file.tree_of(frame.filename)
    for node in ast.walk(tree) if tree is not None else ():
        if (getattr(node, "lineno", None), getattr(node, "col_offset", None),
                getattr(node, "end_col_offset", None)) == (line, col, end_col):
            return getattr(node, "end_lineno", None) or line
    return None


def spans_of_structured(frames: Sequence[dict[str, Any]], file_names: dict[int, str],
                        file: SourceFile) -> list[SourceSpan]:
    """``draft_export``'s frames (``{"filename": <interned id>, "line": n, ...}``)."""
    spans = []
    for frame in frames:
        name = frame.get("filename")
        filename = file_names.get(name, name) if isinstance(name, int) else name
        if isinstance(filename, str) and isinstance(frame.get("line"), int):
            spans.append(statement_span(filename, frame["line"], str(frame.get("name", "")),
                                        file))
    return spans


def spans_of_exception(error: BaseException) -> list[SourceSpan]:
    """The frames an exception passed through, outermost first; dynamo's errors carry the
    user's frames it was tracing (``real_stack``) besides the traceback of the tracer."""
    spans = list(spans_of_traceback(error.__traceback__))
    real_stack = getattr(error, "real_stack", None)
    if isinstance(real_stack, list) and real_stack:
        spans += _summaries(real_stack)
    return spans


def _summaries(frames: list[Any]) -> list[SourceSpan]:
    spans = []
    for frame in frames:
        if isinstance(frame, traceback.FrameSummary) and frame.lineno:
            line = frame.lineno
            spans.append(SourceSpan(frame.filename, line, frame.end_lineno or line,
                                    frame.colno or 0, frame.end_colno or 0, frame.name))
    return spans


def locate(spans: Sequence[SourceSpan], file: SourceFile, fallback: SourceSpan) -> Location:
    """The innermost span the user can edit (``fallback``, the class, when none is); the
    spans past it as "reached through", the user's spans before it as "called from"."""
    spans = [span for span in spans if not _is_runner(span.file)]
    mine = [index for index, span in enumerate(spans) if file.is_reportable(span.file)]
    if not mine:
        inner = tuple(RelatedInfo(to_span(span), "inside the library") for span in spans[-1:])
        return Location(fallback, inner, *_library_at(spans, file))
    where = _whole_call(spans[mine[-1]], file)
    inner_frames = spans[mine[-1] + 1:]
    related = [RelatedInfo(to_span(span), "reached through here") for span in inner_frames]
    related += [RelatedInfo(to_span(spans[index]), "called from here")
                for index in reversed(mine[:-1])]
    return Location(where, tuple(related), *_library_at(inner_frames, file))


def _whole_call(span: SourceSpan, file: SourceFile) -> SourceSpan:
    """The call whose callee the span is (dynamo stops at ``self.rnn`` of ``self.rnn(x)``:
    the instruction that loads the LSTM), else the span."""
    tree = file.tree_of(span.file)
    for node in ast.walk(tree) if tree is not None else ():
        callee = node.func if isinstance(node, ast.Call) else None
        if callee is not None and (callee.lineno, callee.col_offset, callee.end_lineno,
                                   callee.end_col_offset) == (span.line, span.col,
                                                              span.end_line, span.end_col):
            return SourceSpan(span.file, node.lineno, node.end_lineno or node.lineno,
                              node.col_offset, node.end_col_offset or 0, span.function)
    return span


def _library_at(frames: Sequence[SourceSpan],
                file: SourceFile) -> tuple[str | None, SourceSpan | None]:
    """The library function of the innermost frame (by its source name, not the name of
    dynamo's resume function for its rest), and that frame."""
    if not frames:
        return None, None
    return without_resume_names(library_function(frames[-1], file.tree_of)), frames[-1]


def _is_runner(filename: str) -> bool:
    """torch's own machinery (export, dynamo, module call wrappers) and fxls's: never the
    place of a problem nor a useful step of its chain. ``torch.nn`` layers are library code
    like any other."""
    if filename.startswith("<"):  # generated code (`<string>`, `<frozen ...>`): no file
        return True
    resolved = os.path.realpath(filename)
    if resolved.startswith(_OWN_FOLDERS):
        return True
    in_torch = resolved.startswith(_TORCH_FOLDER)
    return (in_torch and not resolved.startswith(_TORCH_LAYERS)) or resolved == _MODULE_CALL


def statement_span(filename: str, line: int, function: str, file: SourceFile) -> SourceSpan:
    """The expression a line stands for: an ``if``/``while``/``assert`` test, else the
    innermost statement starting on the line (its value for an assignment or a return)."""
    tree = file.tree_of(filename)
    starting = [node for node in (ast.walk(tree) if tree is not None else ())
                if isinstance(node, ast.stmt) and node.lineno == line]
    best = max(starting, key=lambda node: node.col_offset, default=None)
    if best is None:
        return SourceSpan(filename, line, line, 0, 0, function)
    target: ast.AST = best
    if isinstance(best, ast.If | ast.While | ast.Assert):
        target = best.test
    elif isinstance(best, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Return | ast.Expr) \
            and best.value is not None:
        target = best.value
    end_line = getattr(target, "end_lineno", None) or line
    end_col = getattr(target, "end_col_offset", None) or 0
    return SourceSpan(filename, getattr(target, "lineno", line), end_line,
                      getattr(target, "col_offset", 0), end_col, function)


#: a quoted expression longer than this is cut (a call whose arguments fill ten lines)
_QUOTED_LENGTH = 80


def span_text(span: SourceSpan, file: SourceFile) -> str:
    """The spanned text on one line, cut at ``_QUOTED_LENGTH`` characters (other files read
    as Python reads them)."""
    text = file.text_of(span.file)
    if span.end_col <= span.col and span.line == span.end_line:
        return ""
    spanned = text.text_at(Span(span.file, span.line, span.end_line, span.col, span.end_col))
    said = re.sub(r"([(\[{]) | ([)\]}])", r"\1\2", " ".join(spanned.split()))
    return said if len(said) <= _QUOTED_LENGTH else said[:_QUOTED_LENGTH - 3] + "..."


def library_expression(where: Location, file: SourceFile) -> str:
    """The library's expression a failure happened at, to quote; none for a ``raise``
    (its text repeats the error the message already gives)."""
    text = span_text(where.library_site, file) if where.library_site is not None else ""
    return "" if text.startswith("raise ") else text


def returned_span(file: SourceFile, class_name: str) -> SourceSpan | None:
    """The value of the last ``return`` of the class's own ``forward`` in the file."""
    module = file.module_tree
    classes = [node for node in (module.body if module is not None else ())
               if isinstance(node, ast.ClassDef) and node.name == class_name]
    forwards = [node for cls in classes for node in cls.body
                if isinstance(node, ast.FunctionDef) and node.name == "forward"]
    returns = [node for forward in forwards for node in ast.walk(forward)
               if isinstance(node, ast.Return) and node.value is not None]
    if not returns:
        return None
    value = max(returns, key=lambda node: node.lineno).value
    assert value is not None
    return SourceSpan(file.filename, value.lineno, value.end_lineno or value.lineno,
                      value.col_offset, value.end_col_offset or 0, "forward")
