"""The analysis's diagnostics as the report holds them: a code, a message and an fxcore
span in, a ``Diagnostic`` out (its severity from the code table, its span in the report's
terms). A leaf: the rules, the pipeline and the passes all make diagnostics through it."""

from __future__ import annotations

from typing import Any

from fxcore.source import SourceSpan
from fxls.analysis.message_text import steady_message
from fxls.codes import CODES
from fxls.report import Diagnostic, Span


def to_span(span: SourceSpan) -> Span:
    return Span(span.file, span.line, span.end_line, span.col, span.end_col)


def diagnostic(code: str, message: str, span: SourceSpan | Span, module: str,
               **data: Any) -> Diagnostic:
    if isinstance(span, SourceSpan):
        span = to_span(span)
    return Diagnostic(code, CODES[code].severity, steady_message(message), span, module,
                      data=data)
