"""Verified quick fixes: proposed from the report, re-traced in the worker, cached per text.

After each analysis the server verifies the fixes of the new report in the background
(``FixCache.verify_all``). ``textDocument/codeAction`` answers from that cache only, and
never offers a fix that was not re-traced; but it does not answer "nothing" because the
verification has not reached the fixes asked for: the request marks the candidates under
its range (or its diagnostics) as *wanted*, the verification takes those next, and the
request waits until each of them is decided (``FixCache.wait``). ``source.fixAll`` waits
for the whole verification, the combination included.

Besides the verified fixes, every diagnostic of the document gets an "ignore on this line"
action (``ignore_on_line``): a comment, which cannot change what the file computes, so it
needs no re-trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import logging
import re
import tokenize
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from lsprotocol import types

from fxls.codes import CODES, Severity
from fxls.fixes import Fix, apply_edits, fixes_for
from fxls.fixes.base import TextEdit
from fxls.fixes.verify import fix_holds
from fxls.project.source_text import source_text
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.lsp_convert import RangeConverter, to_lsp_diagnostic

log = logging.getLogger(__name__)

FIX_ALL_KIND = "source.fixAll.fxls"
#: fixes verified per analysis at most (each costs one re-trace in the worker)
MAX_VERIFIED_PER_REPORT = 24
#: re-traces of fixes run at once (the worker keeps two idle children ready)
VERIFY_CONCURRENCY = 2

#: ``analyze(text, lane)``: the report of ``text``; ``lane`` tells concurrent runs apart;
#: ``analyze(text, lane, tier)`` re-runs the torch tier (``Fix.tier``) too
Analyze = Callable[..., Awaitable[FileReport | None]]


@dataclass(slots=True)
class VerifiedFix:
    diagnostic: Diagnostic
    fix: Fix


@dataclass(slots=True)
class Candidate:
    """A proposed fix and, once re-traced, whether it holds."""

    diagnostic: Diagnostic
    fix: Fix
    decided: bool = False
    accepted: bool = False


@dataclass
class FixCache:
    """Fixes of one text: proposed at once (``reset``), verified by ``verify_all``."""

    text_hash: str = ""
    #: bumps with every ``reset``
    round: int = 0
    candidates: list[Candidate] = field(default_factory=list)
    #: set when the combined safe fixes were verified together
    fix_all: list[TextEdit] | None = None
    #: the whole verification (every candidate and the combination) is over
    finished: bool = True
    #: the combination of the safe fixes was verified (before the fixes of export and
    #: compile problems, each seconds of torch: ``source.fixAll`` does not wait for them)
    fix_all_decided: bool = True
    #: candidates asked for by a waiting request: verified before the others
    wanted: set[int] = field(default_factory=set)
    #: candidates a lane has taken (being re-traced or decided)
    _taken: set[int] = field(default_factory=set)
    _changed: asyncio.Event | None = None
    #: set when a request wants a fix of this round (its verification starts at once)
    _asked: asyncio.Event = field(default_factory=asyncio.Event)

    def reset(self, text: str, report: FileReport) -> None:
        """Propose the fixes of ``report`` for ``text``; none is verified yet. Starts a new
        round: a verification of an earlier round no longer changes the cache."""
        self.round += 1
        self.text_hash = _digest(text)
        self.candidates = [
            Candidate(d, f) for d in report.diagnostics for f in fixes_for(text, d)
        ][:MAX_VERIFIED_PER_REPORT]
        self.fix_all, self.finished, self.wanted, self._taken = None, False, set(), set()
        self.fix_all_decided = False
        self._asked = asyncio.Event()
        self._notify()

    @property
    def fixes(self) -> list[VerifiedFix]:
        """The fixes verified so far, in the report's order."""
        return [VerifiedFix(c.diagnostic, c.fix) for c in self.candidates if c.accepted]

    def matches(self, text: str) -> bool:
        return self.text_hash == _digest(text)

    async def verify_all(
        self, text: str, report: FileReport, analyze: Analyze, quiet_s: float = 0.0
    ) -> None:
        """Re-trace each candidate (wanted ones first, two at a time), then the safe ones
        together, then the fixes verified by a torch tier (``Fix.tier``: seconds each; a
        request that wants one has it verified at once). Call :meth:`reset` with the same
        text and report first. Background work:
        it starts after ``quiet_s`` seconds (a newer analysis of the document cancels it
        meanwhile: saves in a row do not wait for the jobs of the texts before them), or as
        soon as a request wants a fix."""
        current = self.round
        try:
            if quiet_s > 0 and self.candidates:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._asked.wait(), quiet_s)
            for torch_tiers in (False, True):
                lanes = [self._lane(lane, text, report, analyze, current, torch_tiers)
                         for lane in range(VERIFY_CONCURRENCY)]
                await asyncio.gather(*lanes)
                if self.round == current and not torch_tiers:
                    await self._verify_fix_all(text, report, analyze, current)
                    self.fix_all_decided = True
                    self._notify()
        finally:
            if self.round == current:
                self.finished = self.fix_all_decided = True
                for candidate in self.candidates:
                    candidate.decided = True  # not verified (cancelled, failed): not offered
                self._notify()

    async def _lane(
        self, lane: int, text: str, report: FileReport, analyze: Analyze, current: int,
        torch_tiers: bool,
    ) -> None:
        while self.round == current:
            candidate = self._next(torch_tiers)
            if candidate is None:
                return
            edited, tier = apply_edits(text, candidate.fix.edits), candidate.fix.tier
            try:
                # a fix of an export or compile problem is verified by that tier's re-run
                after = await (analyze(edited, lane) if tier is None
                               else analyze(edited, lane, tier))
            except Exception:
                log.exception("verifying a fix failed")
                after = None
            if self.round != current:
                return  # a newer analysis took over
            if after is not None:
                candidate.accepted, reason = fix_holds(report, after, candidate.fix)
                log.info("fix %r: %s", candidate.fix.title, reason)
            candidate.decided = True
            self._notify()

    def _next(self, torch_tiers: bool) -> Candidate | None:
        """The next candidate to verify: a wanted one if any, else the first one left (of
        those a torch tier verifies only when ``torch_tiers``). It is taken (``decided``
        stays False until its re-trace is in)."""
        waiting = [i for i in sorted(self.wanted) if self._open(i)]
        pending = waiting or [i for i, candidate in enumerate(self.candidates)
                              if self._open(i) and (torch_tiers or candidate.fix.tier is None)]
        if not pending:
            return None
        index = pending[0]
        self.wanted.discard(index)
        self._taken.add(index)
        return self.candidates[index]

    def _open(self, index: int) -> bool:
        return index not in self._taken and not self.candidates[index].decided

    async def _verify_fix_all(
        self, text: str, report: FileReport, analyze: Analyze, current: int
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
        after = await analyze(apply_edits(text, edits), 0)
        if after is None or self.round != current:
            return
        errors_before = sum(d.severity is Severity.ERROR for d in report.diagnostics)
        errors_after = sum(d.severity is Severity.ERROR for d in after.diagnostics)
        if errors_after <= errors_before and len(after.diagnostics) < len(report.diagnostics):
            self.fix_all = edits

    # -- waiting ----------------------------------------------------------------------------

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def wait(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``ready()`` (checked after each verified candidate) or ``timeout``
        seconds; whether it is ready."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not ready():
            if self.finished and not ready():
                return False
            left = deadline - loop.time()
            if left <= 0:
                return False
            if self._changed is None:
                self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                return ready()
        return True

    def want(self, indices: Iterable[int]) -> None:
        """Verify these candidates next (and start verifying now, if it waits)."""
        self.wanted.update(i for i in indices if self._open(i))
        self._asked.set()

    def decided(self, indices: Iterable[int]) -> bool:
        return all(i >= len(self.candidates) or self.candidates[i].decided for i in indices)


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return ((a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])) or a[:2] == b[:2]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _same_range(diagnostic: Diagnostic, lsp: types.Diagnostic, converter: RangeConverter) -> bool:
    return converter.range(diagnostic.span) == lsp.range and diagnostic.code == lsp.code


def _touches(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges overlap or touch (an empty range is a cursor position)."""
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _kind_value(kind: object) -> str:
    return str(kind.value if hasattr(kind, "value") else kind)  # type: ignore[attr-defined]


def wants_quickfix(params: types.CodeActionParams) -> bool:
    only = params.context.only
    return not only or any(
        _kind_value(kind).startswith(types.CodeActionKind.QuickFix.value)
        or types.CodeActionKind.QuickFix.value.startswith(_kind_value(kind))
        for kind in only
    )


def wants_fix_all(params: types.CodeActionParams) -> bool:
    only = params.context.only
    return not only or any(FIX_ALL_KIND.startswith(_kind_value(kind)) for kind in only)


def asked_about(at: types.Range, asked: types.Range) -> bool:
    """Whether a request for ``asked`` is about a diagnostic at ``at``: the ranges touch,
    or ``asked`` is a bare cursor (an empty range) on one of ``at``'s lines."""
    cursor = (asked.start.line, asked.start.character) == (asked.end.line, asked.end.character)
    return (cursor and at.start.line <= asked.start.line <= at.end.line) or _touches(at, asked)


def relevant(
    cache: FixCache, params: types.CodeActionParams, converter: RangeConverter
) -> list[tuple[int, list[types.Diagnostic]]]:
    """The candidates a request is about, each with the request's diagnostics it fixes.

    A candidate whose diagnostic is among the request's (same code and range) is about it;
    so is one whose diagnostic's range touches the request's range or, for a bare cursor,
    covers the cursor's line: right after a save the client still sends the diagnostics of
    the text before (shifted, or none yet), and Ctrl+. is asked from anywhere on the line
    (Neovim sends the cursor position; VS Code too when no diagnostic it knows is there)."""
    found = []
    for index, candidate in enumerate(cache.candidates):
        matching = [d for d in params.context.diagnostics
                    if _same_range(candidate.diagnostic, d, converter)]
        if matching or asked_about(converter.range(candidate.diagnostic.span), params.range):
            found.append((index, matching))
    return found


def code_actions(
    cache: FixCache,
    uri: str,
    text: str,
    params: types.CodeActionParams,
    converter: RangeConverter,
) -> list[types.CodeAction]:
    """The verified fixes for ``params`` (and the fix-all action), from ``cache``."""
    if not cache.matches(text):
        return []  # the buffer changed since the fixes were verified
    actions: list[types.CodeAction] = []
    if wants_quickfix(params):
        for index, matching in relevant(cache, params, converter):
            candidate = cache.candidates[index]
            if not candidate.accepted:
                continue
            diagnostics = matching or [to_lsp_diagnostic(candidate.diagnostic, converter)]
            actions.append(
                types.CodeAction(
                    title=candidate.fix.title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=diagnostics,
                    edit=_workspace_edit(uri, candidate.fix.edits, converter),
                    is_preferred=candidate.fix.safe,
                )
            )
    if wants_fix_all(params) and cache.fix_all:
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


# -- ignore on this line ---------------------------------------------------------------------

_IGNORE_PRAGMA = re.compile(r"#\s*fxls:\s*ignore(\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


def ignore_on_line(
    uri: str, text: str, params: types.CodeActionParams, converter: RangeConverter,
    shown: list[types.Diagnostic] | None = None,
) -> list[types.CodeAction]:
    """"Ignore FXnnn on this line" for each fxls diagnostic of the request located in the
    document: adds ``# fxls: ignore[FXnnn]`` at the end of the diagnostic's first line, or
    the code to the pragma already there. A request that brings no fxls diagnostic (asked
    right after a save, before the client had the new ones) is about those of ``shown``
    (the document's own, for ``text``) under its range."""
    if not wants_quickfix(params):
        return []
    diagnostics = list(params.context.diagnostics)
    if shown and not any(d.source == "fxls" for d in diagnostics):
        diagnostics = [d for d in shown if asked_about(d.range, params.range)]
    index = source_text(text)
    comments, in_string = _scan(text)
    actions = []
    seen: set[tuple[str, int]] = set()
    for diagnostic in diagnostics:
        code = str(diagnostic.code or "")
        if diagnostic.source != "fxls" or code not in CODES:
            continue
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        if data.get("located_in"):
            continue  # an echo of a problem in another file: its line is not here
        line = diagnostic.range.start.line + 1  # 1-based, as the analysis reads pragmas
        if (code, line) in seen or line > len(index.lines()):
            continue
        seen.add((code, line))
        if line in in_string:
            continue  # the line ends inside a string: a comment there would be text
        edit = _ignore_edit(index.lines()[line - 1], line, code, comments.get(line))
        if edit is None:
            continue
        actions.append(types.CodeAction(
            title=f"fxls: ignore {code} on this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_workspace_edit(uri, [edit], converter),
            is_preferred=False,
        ))
    return actions


def _ignore_edit(line_text: str, line: int, code: str, comment: tuple[int, str] | None
                 ) -> TextEdit | None:
    """The edit that makes ``line`` ignore ``code``; None when it cannot (the line is
    continued by a backslash) or already does."""
    body = line_text.rstrip("\r\n")
    if comment is None:
        stripped = body.rstrip()
        if stripped.endswith("\\"):
            return None
        col = len(stripped.encode("utf-8"))
        end = len(body.encode("utf-8"))
        return TextEdit(line, col, line, end, f"  # fxls: ignore[{code}]")
    col, comment_text = comment
    match = _IGNORE_PRAGMA.search(comment_text)
    if match is None:
        end = col + len(comment_text.encode("utf-8"))
        return TextEdit(line, end, line, end, f"  # fxls: ignore[{code}]")
    if match.group(1) is None:
        return None  # `# fxls: ignore` ignores every code already
    codes = [c.strip().upper() for c in (match.group("codes") or "").split(",") if c.strip()]
    if code in codes:
        return None
    start = col + len(comment_text[: match.start(1)].encode("utf-8"))
    end = col + len(comment_text[: match.end(1)].encode("utf-8"))
    return TextEdit(line, start, line, end, f"[{','.join([*codes, code])}]")


def _scan(text: str) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """line -> (UTF-8 byte column, text) of the comment on that line; and the lines that
    end inside a (multi-line) string."""
    comments: dict[int, tuple[int, str]] = {}
    in_string: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == tokenize.COMMENT:
                line_text = token.line.splitlines()[0] if token.line else ""
                col = len(line_text[: token.start[1]].encode("utf-8"))
                comments[token.start[0]] = (col, token.string)
            elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
                in_string.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return comments, in_string
