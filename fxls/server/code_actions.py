"""Verified quick fixes: proposed from the report, re-traced in the worker, cached per text.

After each analysis the server verifies the fixes of the new report in the background
(``FixCache.verify_all``); ``textDocument/codeAction`` answers from that cache only, so it is
as fast as hover and never offers a fix that was not re-traced.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from lsprotocol import types

from fxls.codes import Severity
from fxls.fixes import Fix, apply_edits, fixes_for
from fxls.fixes.base import TextEdit
from fxls.fixes.verify import fix_holds
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.lsp_convert import RangeConverter

log = logging.getLogger(__name__)

FIX_ALL_KIND = "source.fixAll.fxls"
#: fixes verified per analysis at most (each costs one re-trace in the worker)
MAX_VERIFIED_PER_REPORT = 24

Analyze = Callable[[str], Awaitable[FileReport | None]]


@dataclass(slots=True)
class VerifiedFix:
    diagnostic: Diagnostic
    fix: Fix


@dataclass
class FixCache:
    """Verified fixes for the text a report was computed from."""

    text_hash: str = ""
    fixes: list[VerifiedFix] = field(default_factory=list)
    #: set when the combined safe fixes were verified together
    fix_all: list[TextEdit] | None = None

    async def verify_all(self, text: str, report: FileReport, analyze: Analyze) -> None:
        digest = _digest(text)
        self.text_hash, self.fixes, self.fix_all = digest, [], None
        verified: list[VerifiedFix] = []
        candidates = [(d, f) for d in report.diagnostics for f in fixes_for(text, d)][
            :MAX_VERIFIED_PER_REPORT
        ]
        for diagnostic, fix in candidates:
            try:
                fixed = apply_edits(text, fix.edits)
                after = await analyze(fixed)
            except Exception:
                log.exception("verifying a fix failed")
                continue
            if after is None or self.text_hash != digest:
                return  # a newer analysis took over
            accepted, reason = fix_holds(report, after, fix)
            log.info("fix %r: %s", fix.title, reason)
            if accepted:
                verified.append(VerifiedFix(diagnostic, fix))
                self.fixes = list(verified)
        await self._verify_fix_all(text, report, analyze, digest)

    async def _verify_fix_all(
        self, text: str, report: FileReport, analyze: Analyze, digest: str
    ) -> None:
        edits: list[TextEdit] = []
        taken: list[tuple[int, int, int, int]] = []
        for item in self.fixes:
            if not item.fix.safe:
                continue
            extents = [(e.line, e.col, e.end_line, e.end_col) for e in item.fix.edits]
            if any(_overlaps(a, b) for a in extents for b in taken):
                continue
            taken.extend(extents)
            edits.extend(item.fix.edits)
        if not edits:
            return
        after = await analyze(apply_edits(text, edits))
        if after is None or self.text_hash != digest:
            return
        errors_before = sum(d.severity is Severity.ERROR for d in report.diagnostics)
        errors_after = sum(d.severity is Severity.ERROR for d in after.diagnostics)
        if errors_after <= errors_before and len(after.diagnostics) < len(report.diagnostics):
            self.fix_all = edits


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return ((a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])) or a[:2] == b[:2]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _same_range(diagnostic: Diagnostic, lsp: types.Diagnostic, converter: RangeConverter) -> bool:
    return converter.range(diagnostic.span) == lsp.range and diagnostic.code == lsp.code


def code_actions(
    cache: FixCache,
    uri: str,
    text: str,
    params: types.CodeActionParams,
    converter: RangeConverter,
) -> list[types.CodeAction]:
    if cache.text_hash != _digest(text):
        return []  # the buffer changed since the fixes were verified
    only = params.context.only
    wants_quickfix = not only or any(
        str(kind).startswith(types.CodeActionKind.QuickFix.value) for kind in only
    )
    wants_fix_all = not only or any(
        FIX_ALL_KIND.startswith(str(kind.value if hasattr(kind, "value") else kind))
        for kind in only
    )
    actions: list[types.CodeAction] = []
    if wants_quickfix:
        for item in cache.fixes:
            matching = [
                d for d in params.context.diagnostics if _same_range(item.diagnostic, d, converter)
            ]
            if not matching:
                continue
            actions.append(
                types.CodeAction(
                    title=item.fix.title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=matching,
                    edit=_workspace_edit(uri, item.fix.edits, converter),
                    is_preferred=item.fix.safe,
                )
            )
    if wants_fix_all and cache.fix_all:
        actions.append(
            types.CodeAction(
                title="fxls: apply all safe fixes",
                kind=FIX_ALL_KIND,
                edit=_workspace_edit(uri, cache.fix_all, converter),
            )
        )
    return actions


def _workspace_edit(
    uri: str, edits: list[TextEdit], converter: RangeConverter
) -> types.WorkspaceEdit:
    text_edits = []
    for edit in edits:
        span = Span(converter.path, edit.line, edit.end_line, edit.col, edit.end_col)
        text_edits.append(types.TextEdit(range=converter.range(span), new_text=edit.new_text))
    return types.WorkspaceEdit(changes={uri: text_edits})
