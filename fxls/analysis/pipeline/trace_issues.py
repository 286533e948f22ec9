"""The diagnostics of a trace's problems (fxcore's ``TraceIssue``, and a ``sys.exit()``
while tracing): where the user sees each one (the innermost frame of their own code) and
in their words; a problem inside library code is said to be there, at the user's line that
reached it (``issue_kinds`` has each kind's code and words)."""

from __future__ import annotations

import ast
from pathlib import Path

import fxcore.source
from fxcore.recovering import IssueKind, TraceIssue
from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.issue_kinds import REPORTING
from fxls.analysis.library_names import library_function, opaque_target
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.wording import in_user_terms
from fxls.report import Diagnostic, RelatedInfo, Span
from fxls.worker.api import ProcessExit


def issue_diagnostic(
    issue: TraceIssue, module: str, class_span: SourceSpan, file: SourceFile
) -> Diagnostic:
    reporting = REPORTING[issue.kind]
    candidates = [*reversed(issue.stack)]
    if issue.span is not None:
        candidates.insert(0, issue.span)
    where = next((s for s in candidates if file.is_reportable(s.file)), class_span)
    if reporting.narrows_to_condition:
        tree = file.tree_of(where.file)
        if tree is not None:
            where = _condition_of(where, tree)
    text = _text_at(file, where)
    message = reporting.message(issue, f"`{text}`" if text else "this expression", module)
    site = issue.span or (issue.stack[-1] if issue.stack else None)
    library = None
    if site is not None and site.file != where.file and not file.is_reportable(site.file):
        library = library_function(site, file.tree_of)
        message = reporting.library_message(
            issue, f"inside `{library}` ({Path(site.file).name}:{site.line}), reached from here",
            module)
    taken = _none_default_taken(where, module, file) if (
        issue.kind is IssueKind.EXCEPTION) else None
    if taken is not None:
        message += (f"; `{taken}` defaults to None but is a traced input here, so the branch "
                     f"of `{taken} is not None` ran: trace with `concrete_args={{'{taken}': "
                     f"None}}` (`# fxls: concrete {{'{taken}': None}}`)")
    item = diagnostic(reporting.code, in_user_terms(message), where, module,
                      kind=issue.kind.value)
    if taken is not None:
        item.data["none_default"] = taken  # the quick fix's pragma
    if library is not None and site is not None:
        item.related.append(RelatedInfo(to_span(site), reporting.site_words))
        item.data["library_function"] = library
        item.data["opaque"] = opaque_target(library)
    for outer in issue.stack[:-1]:
        if outer != where and file.is_reportable(outer.file):
            item.related.append(RelatedInfo(to_span(outer), "reached from here"))
    return item


def _none_default_taken(where: SourceSpan, module: str, file: SourceFile) -> str | None:
    """The parameter ``mask`` when the exception was raised in the branch of ``if mask is not
    None:`` in the traced class's own ``forward``, ``mask`` defaulting to None: symbolic
    tracing makes every parameter an input, so the branch meant for a given mask is taken
    (torch.fx does so too); ``concrete_args`` keeps it None."""
    tree = file.tree_of(where.file)
    if tree is None:
        return None
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and cls.name == module):
            continue
        forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef)
                        and f.name == "forward"), None)
        if forward is None:
            return None
        defaults = _none_defaults(forward.args)
        return next((name for name in _taken_not_none_branches(forward, where.line)
                     if name in defaults), None)
    return None


def _taken_not_none_branches(function: ast.FunctionDef, line: int) -> list[str]:
    """The names ``n`` of the ``if n is not None:`` statements whose body holds ``line``."""
    names = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.If) and node.body and node.body[0].lineno <= line
                <= (node.body[-1].end_lineno or node.body[-1].lineno)):
            continue
        test = node.test
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None):
            names.append(test.left.id)
    return names


def _none_defaults(arguments: ast.arguments) -> set[str]:
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults,
                  strict=True),
             *((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
               if d is not None)]
    return {argument.arg for argument, default in pairs
            if isinstance(default, ast.Constant) and default.value is None}


def exit_diagnostic(
    error: SystemExit, module: str, class_span: SourceSpan, file: SourceFile
) -> Diagnostic:
    """FX004 where user code raised SystemExit (``sys.exit()``) while being traced."""
    spans = fxcore.source.spans_of_traceback(error.__traceback__)
    where = next((s for s in reversed(spans) if file.is_reportable(s.file)), class_span)
    if isinstance(error, ProcessExit):
        message = (f"os._exit({error.exit_code!r}) (called while tracing `{module}`): it ends "
                   "the process at once and cannot be traced; fxls stopped it there")
    else:
        message = (f"SystemExit: {error.code!r} (raised while tracing `{module}`): the code "
                   "called sys.exit(), which ends a program but cannot be traced")
    return diagnostic("FX004", message, where, module, kind="exception")


def _condition_of(span: SourceSpan, tree: ast.AST) -> SourceSpan:
    """For a bare-name condition Python's positions cover the whole statement: narrow them
    to the statement's test expression."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While | ast.Assert | ast.IfExp) and (
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
        ) == (span.line, span.col, span.end_line, span.end_col):
            test = node.test
            return SourceSpan(span.file, test.lineno, test.end_lineno or test.lineno,
                              test.col_offset, test.end_col_offset or 0, span.function)
    return span


def _text_at(file: SourceFile, span: SourceSpan) -> str:
    """The spanned text; for a span over several lines (a ``for`` loop), its first line.
    Other files than the analysed one are read as Python read them (linecache)."""
    text = file.text_of(span.file)
    if span.line != span.end_line:
        first_line = Span(span.file, span.line, span.line, span.col, text.byte_length(span.line))
        return text.text_at(first_line).split("  #")[0].strip()  # without an inline comment
    return text.text_at(span)
