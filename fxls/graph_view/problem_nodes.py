"""Where a problem lands on a graph, so that every problem the page lists is marked on it.

In order: the nodes its own expression made (``"own"``); else the nodes made at its lines
in the user's files (``"line"``): a problem inside library code is reported at the user's
line that called into it, its related information names the user's other lines on the way,
and an exported program's library nodes sit at that line; else the group of the module
that line calls (``"group"``: ``self.backbone(x)`` -> ``backbone``), when tracing made no
node at the user's line at all (the library's nodes are at the library's lines). ``None``
when nothing matches.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fxls.graph_view.source_lines import SourceFiles
from fxls.report import Diagnostic, NodeInfo, Span

Attached = Literal["own", "line", "group"]

#: a submodule call in source text: ``self.blocks[0].attn(`` -> ``.blocks[0].attn``
_SUBMODULE_CALL = re.compile(r"\bself((?:\s*\.\s*[A-Za-z_]\w*|\s*\[[^\[\]]*\])+)\s*\(")
#: one step of that path: an attribute, or a subscript (only a literal index is a name)
_PATH_STEP = re.compile(r"\.\s*([A-Za-z_]\w*)|\[\s*(\d+)\s*\]|\[[^\]]*\]")


@dataclass(frozen=True, slots=True)
class Landing:
    """Where one problem is marked: its nodes, or the group (``nodes`` empty)."""

    attached: Attached | None
    nodes: list[str] = field(default_factory=list)
    group: str | None = None


def spans_overlap(a: Span, b: Span) -> bool:
    """Whether ``a`` and ``b`` share a character (a node located at a diagnostic)."""
    if a.file != b.file:
        return False
    return (a.line, a.col) < (b.end_line, b.end_col) and (b.line, b.col) < (a.end_line, a.end_col)


def landing(diagnostic: Diagnostic, nodes: Sequence[NodeInfo], groups: Collection[str],
            user_files: Collection[str], files: SourceFiles) -> Landing:
    """Where ``diagnostic`` is marked on a graph of ``nodes`` and module ``groups``;
    ``user_files`` are the files whose lines count as the user's (the diagnostic's own file
    counts always)."""
    span = diagnostic.span
    own = [n.name for n in nodes if n.span is not None and _inside(n.span, span)]
    if own:
        return Landing("own", own)
    # a problem at a submodule's call (`self.bert(x)`, raised inside the library) is that
    # module's, not that of a call around it on the line (`self.head(self.bert(x)...)`)
    called = called_groups(span, groups, files, whole_lines=False)
    if called:
        return Landing("group", group=called[0])
    places = user_places(diagnostic, user_files)
    at_line = [n.name for n in nodes if n.span is not None and _on_lines(n.span, places)]
    if at_line:
        return Landing("line", at_line)
    group = next((g for place in places for g in called_groups(place, groups, files)), None)
    if group is not None:
        return Landing("group", group=group)
    return Landing(None)


def user_places(diagnostic: Diagnostic, user_files: Collection[str]) -> list[Span]:
    """The diagnostic's range, then its related locations in the user's files."""
    files = {diagnostic.span.file, *user_files}
    return [diagnostic.span, *(r.span for r in diagnostic.related if r.span.file in files)]


def _inside(node: Span, span: Span) -> bool:
    """Whether ``node`` lies within ``span`` (an expression the diagnostic's range holds)."""
    return node.file == span.file and (span.line, span.col) <= (node.line, node.col) and \
        (node.end_line, node.end_col) <= (span.end_line, span.end_col)


def _on_lines(node: Span, places: Sequence[Span]) -> bool:
    return any(node.file == p.file and node.line <= p.end_line and p.line <= node.end_line
               for p in places)


def called_groups(place: Span, groups: Collection[str], files: SourceFiles, *,
                  whole_lines: bool = True) -> list[str]:
    """The module groups called in the text of ``place`` (its whole lines when its own
    range calls none, unless not ``whole_lines``), in text order:
    ``self.blocks[0].attn.forward(x)`` -> ``blocks.0.attn``, the longest prefix of the
    attribute path that is a group."""
    text = files.text(place.file)
    if text is None:
        return []
    found: list[str] = []
    lines = "\n".join(text.line(n) for n in range(place.line, place.end_line + 1))
    for source in (text.text_at(place), lines) if whole_lines else (text.text_at(place),):
        for match in _SUBMODULE_CALL.finditer(source):
            group = _longest_group(_path_parts(match.group(1)), groups)
            if group is not None and group not in found:
                found.append(group)
        if found:
            break
    return found


def _path_parts(path: str) -> list[str]:
    """``.blocks[0].attn`` -> ``["blocks", "0", "attn"]``; a subscript that is not a
    literal index (``.blocks[i]``) ends the path: which module it is, the text cannot say."""
    parts = []
    for step in _PATH_STEP.finditer(path):
        part = step.group(1) or step.group(2)
        if part is None:
            break
        parts.append(part)
    return parts


def _longest_group(parts: list[str], groups: Collection[str]) -> str | None:
    for end in range(len(parts), 0, -1):
        path = ".".join(parts[:end])
        if path in groups:
            return path
    return None
