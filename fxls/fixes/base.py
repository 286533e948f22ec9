"""Edits in Python units (1-based lines, UTF-8 byte columns) and applying them to text."""

from __future__ import annotations

from dataclasses import dataclass

from fxls.project.source_text import source_text
from fxls.report import Span


@dataclass(frozen=True, slots=True)
class TextEdit:
    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str


@dataclass(slots=True)
class Fix:
    """One proposed fix: a title for the editor and the edits that make it."""

    title: str
    code: str
    edits: list[TextEdit]
    #: safe fixes are applied by ``source.fixAll.fxls``; others only on request
    safe: bool = True
    #: a class this fix makes a leaf: it stops being traced as a root (status "skipped")
    leaf_class: str | None = None
    #: what verification checks beyond "the diagnostic is gone and nothing new appeared"
    expect_same_outputs: bool = True
    #: the torch tier (``"export"``, ``"compile"``) whose re-run on the edited text verifies
    #: the fix; None: the symbolic-trace tier alone
    tier: str | None = None
    #: the span of the diagnostic it fixes: a fix verified by a torch tier must remove the
    #: diagnostic there (``fxls.fixes.verify_targets``)
    at: Span | None = None


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits (any order) to ``text``."""
    source = source_text(text)
    located = sorted(
        ((source.offset(e.line, e.col), source.offset(e.end_line, e.end_col), e) for e in edits),
        key=lambda item: item[0],
        reverse=True,
    )
    for start, end, edit in located:
        text = text[:start] + edit.new_text + text[end:]
    return text
