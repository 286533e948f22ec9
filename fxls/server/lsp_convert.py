"""The bridge between fxls reports and LSP types, in the client's position encoding."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fxls.codes import CODES, doc_url
from fxls.positions import LineIndex
from fxls.report import Diagnostic, FileReport, Span

_SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


class RangeConverter:
    """Converts report spans to LSP ranges for one document text and encoding."""

    def __init__(self, path: str, text: str, encoding: str) -> None:
        self.path = str(Path(path).resolve())
        self.encoding = encoding
        self.index = LineIndex(text)
        self._others: dict[str, LineIndex] = {}

    def _index_for(self, file: str) -> LineIndex:
        resolved = str(Path(file).resolve())
        if resolved == self.path:
            return self.index
        index = self._others.get(resolved)
        if index is None:
            try:
                text = Path(resolved).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            index = self._others[resolved] = LineIndex(text)
        return index

    def range(self, span: Span) -> types.Range:
        index = self._index_for(span.file)
        start = index.to_position(span.line, span.col, self.encoding)
        end = index.to_position(span.end_line, span.end_col, self.encoding)
        return types.Range(
            types.Position(start.line, start.character), types.Position(end.line, end.character)
        )

    def location(self, span: Span) -> types.Location:
        return types.Location(Path(span.file).resolve().as_uri(), self.range(span))

    def to_python(self, position: types.Position) -> tuple[int, int]:
        """Client position -> (1-based line, UTF-8 byte column) in this document."""
        return position.line + 1, self.index.to_byte_col(
            position.line, position.character, self.encoding
        )


def to_lsp_diagnostic(diagnostic: Diagnostic, converter: RangeConverter) -> types.Diagnostic:
    code = CODES.get(diagnostic.code)
    tags = [types.DiagnosticTag.Unnecessary] if code is not None and code.unnecessary else None
    related = [
        types.DiagnosticRelatedInformation(converter.location(r.span), r.message)
        for r in diagnostic.related
    ] or None
    data = dict(diagnostic.data)
    data["code"] = diagnostic.code
    if diagnostic.module:
        data["module"] = diagnostic.module
    return types.Diagnostic(
        range=converter.range(diagnostic.span),
        message=diagnostic.message,
        severity=_SEVERITIES.get(diagnostic.severity, types.DiagnosticSeverity.Warning),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=doc_url(diagnostic.code, prefer_local=True)),
        source="fxls",
        tags=tags,
        related_information=related,
        data=data,
    )


def to_lsp_diagnostics(report: FileReport, converter: RangeConverter) -> list[types.Diagnostic]:
    """Diagnostics of ``report`` located in the document itself (others are related info)."""
    return [
        to_lsp_diagnostic(d, converter)
        for d in report.diagnostics
        if str(Path(d.span.file).resolve()) == converter.path
    ]
