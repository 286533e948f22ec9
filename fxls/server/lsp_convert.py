"""The bridge between fxls reports and LSP types, in the client's position encoding."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types

from fxls.codes import CODES, doc_url
from fxls.project.python_source import read_python_source_or_replace
from fxls.project.source_text import SourceText, source_text
from fxls.report import Diagnostic, FileReport, Span

_SEVERITIES = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


#: texts of files on disk that spans point into (libraries' files: every publish converts
#: the related spans of a problem inside ``modeling_bert.py``), by path
_ON_DISK: OrderedDict[str, tuple[tuple[int, int, int], SourceText]] = OrderedDict()
ON_DISK_KEPT = 64


def on_disk(path: str) -> SourceText:
    """The indexed text of the file at ``path`` (a real path), read again when its
    modification time, size or inode changed; empty for anything but a regular file of at
    most 8 MB (a span may point anywhere: a FIFO, ``/dev/zero``), never blocking."""
    try:
        info = os.stat(path)
        key = (info.st_mtime_ns, info.st_size, info.st_ino)
    except OSError:
        return SourceText(read_python_source_or_replace(path))
    kept = _ON_DISK.get(path)
    if kept is not None and kept[0] == key:
        _ON_DISK.move_to_end(path)
        return kept[1]
    index = _ON_DISK[path] = (key, SourceText(read_python_source_or_replace(path)))
    _ON_DISK.move_to_end(path)
    while len(_ON_DISK) > ON_DISK_KEPT:
        _ON_DISK.popitem(last=False)
    return index[1]


class RangeConverter:
    """Converts report spans to LSP ranges for one document text and encoding.

    Spans in other files are converted with the text in ``other_texts`` (resolved path ->
    text; the server passes the analysed text of other open documents), else from disk.
    """

    def __init__(
        self,
        path: str,
        text: str,
        encoding: str,
        other_texts: Mapping[str, str] | None = None,
    ) -> None:
        self.path = os.path.realpath(path)
        self.encoding = encoding
        self.index = source_text(text)
        self._others: dict[str, SourceText] = {
            resolved: source_text(other) for resolved, other in (other_texts or {}).items()
        }

    def _index_for(self, file: str) -> SourceText:
        resolved = os.path.realpath(file)
        if resolved == self.path:
            return self.index
        index = self._others.get(resolved)
        if index is None:
            index = self._others[resolved] = on_disk(resolved)
        return index

    def range(self, span: Span) -> types.Range:
        start, end = self._index_for(span.file).to_range(span, self.encoding)
        return types.Range(
            types.Position(start.line, start.character), types.Position(end.line, end.character)
        )

    def position(self, line: int, col: int) -> types.Position:
        """(1-based line, UTF-8 byte column) in this document -> the client's position."""
        position = self.index.to_position(line, col, self.encoding)
        return types.Position(position.line, position.character)

    def location(self, span: Span) -> types.Location:
        return types.Location(Path(os.path.realpath(span.file)).as_uri(), self.range(span))

    def to_python(self, position: types.Position) -> tuple[int, int]:
        """Client position -> (1-based line, UTF-8 byte column) in this document."""
        return position.line + 1, self.index.to_byte_col(
            position.line, position.character, self.encoding
        )


def to_lsp_diagnostic(diagnostic: Diagnostic, converter: RangeConverter) -> types.Diagnostic:
    code = CODES.get(diagnostic.code)
    related = [
        types.DiagnosticRelatedInformation(converter.location(r.span), r.message)
        for r in diagnostic.related
    ] or None
    data = dict(diagnostic.data)
    data["code"] = diagnostic.code
    if diagnostic.module:
        data["module"] = diagnostic.module
    return _lsp_diagnostic(
        diagnostic, converter.range(diagnostic.span), diagnostic.message, related, data,
        tags=[types.DiagnosticTag.Unnecessary] if code is not None and code.unnecessary
        else None,
    )


def _lsp_diagnostic(
    diagnostic: Diagnostic,
    at: types.Range,
    message: str,
    related: list[types.DiagnosticRelatedInformation] | None,
    data: dict[str, Any],
    tags: list[types.DiagnosticTag] | None = None,
) -> types.Diagnostic:
    """The one place an LSP diagnostic is made: ``diagnostic``'s code (linked to its
    documentation) and severity, shown at ``at``."""
    return types.Diagnostic(
        range=at,
        message=message,
        severity=_SEVERITIES.get(diagnostic.severity, types.DiagnosticSeverity.Warning),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=help_url(diagnostic)),
        source="fxls",
        tags=tags,
        related_information=related,
        data=data,
    )


def help_url(diagnostic: Diagnostic) -> str:
    """torch's page for a graph break's type (``GBnnnn``) where there is one, else ours."""
    url = diagnostic.data.get("help_url")
    if isinstance(url, str) and url.startswith("https://"):
        return url
    return doc_url(diagnostic.code)


#: severities worth repeating at the call that reaches them (a rewrite suggestion is not)
_ECHOED = ("error", "warning")


def place_diagnostics(
    report: FileReport, converter: RangeConverter, is_local: Callable[[str], bool]
) -> dict[str, list[types.Diagnostic]]:
    """The diagnostics of ``report`` by the resolved path of the file that shows them.

    The analysed document (``converter.path``) shows the problems located in it and, for
    each problem (error or warning) located in another file, an *echo* at the call in the
    document that reaches it: the innermost of the diagnostic's related spans that lies in
    the document (related spans follow the stack, root first). Without such a span there is
    no echo; no location is invented. Another file shows the problems located in it when
    ``is_local(path)`` (a project file, not an installed library).
    """
    document = converter.path
    placed: dict[str, list[types.Diagnostic]] = {document: []}
    echoes: dict[tuple[str, tuple[Any, ...]], list[tuple[Diagnostic, Span]]] = {}
    for item in report.diagnostics:
        file = _resolved(item.span.file)
        if file == document:
            placed[document].append(to_lsp_diagnostic(item, converter))
            continue
        if is_local(file):
            placed.setdefault(file, []).append(to_lsp_diagnostic(item, converter))
        site = _reaching_site(item, document)
        if site is not None and item.severity in _ECHOED:
            echoes.setdefault((item.code, site.key()), []).append((item, site))
    placed[document].extend(_echo(group, converter) for group in echoes.values())
    return placed


def _reaching_site(item: Diagnostic, document: str) -> Span | None:
    inside = [r.span for r in item.related if _resolved(r.span.file) == document]
    return inside[-1] if inside else None


def _echo(group: list[tuple[Diagnostic, Span]], converter: RangeConverter) -> types.Diagnostic:
    """One diagnostic at the reaching call for the problems (same code) it leads to."""
    first, site = group[0]
    message = f"in {_short_name(first.span.file, converter.path)}:{first.span.line}: "
    message += first.message
    if len(group) > 1:
        more = len(group) - 1
        message += f" (and {more} more {'problem' if more == 1 else 'problems'} reached "
        message += "through this call)"
    related = [
        types.DiagnosticRelatedInformation(converter.location(item.span), item.message)
        for item, _ in group
    ]
    related += [
        types.DiagnosticRelatedInformation(converter.location(r.span), r.message)
        for r in first.related
        if r.span.key() != site.key()
    ]
    data: dict[str, Any] = {"code": first.code, "located_in": converter.location(first.span).uri}
    if first.module:
        data["module"] = first.module
    return _lsp_diagnostic(first, converter.range(site), message, related, data)


def _short_name(file: str, document: str) -> str:
    """``layers.py`` or ``models/layers.py`` next to the document, else the file's name."""
    relative = os.path.relpath(_resolved(file), os.path.dirname(document))
    return relative if not relative.startswith("..") else Path(file).name


def _resolved(file: str) -> str:
    # realpath, not Path.resolve: a span into a symbolic-link loop (a report is untrusted)
    # is a path like any other, not a RuntimeError
    return os.path.realpath(file)
