"""The compile tracer: each built instance through dynamo (``torch._dynamo.explain``, a
backend that compiles nothing) on its example inputs; every graph break at the user's line
(FX301: its reason, its graph-break type ``GBnnnn`` with torch's page, torch's hint).

``explain`` runs the whole forward, resuming after each break, so one run finds them all.
With ``fullgraph`` targeted a break is an error (``torch.compile(fullgraph=True)`` raises
on it), otherwise a warning: the model compiles, in pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.library_entry import user_callers
from fxls.analysis.pipeline.target_graphs import target_graph
from fxls.analysis.pipeline.target_inputs import TargetRun
from fxls.analysis.pipeline.torch_words import first_sentence
from fxls.analysis.pipeline.user_frames import (
    Location,
    library_expression,
    locate,
    spans_of_exception,
    spans_of_summaries,
)
from fxls.analysis.torch_warmth.code_caches import CodeNames, recording
from fxls.analysis.torch_warmth.graph_data import Undescribable, describe
from fxls.codes import Severity
from fxls.report import BreakInfo, Diagnostic, TargetGraph

COMPILED = "compiled"
#: dynamo's name for a jump (``if``, ``while``, ``and``) on a tensor's value
_DATA_DEPENDENT_JUMP = "generic_jump"
#: dynamo's record of compiling the graph up to a statement it then runs in Python: the
#: other half of the break at that statement (an LSTM call), not a break of its own
_STEPPED = "step_unsupported"


@dataclass(frozen=True)
class GraphBreak:
    """One break as torch's message gives it: its type, why, and what to do."""

    gb_type: str
    explanation: str
    hints: tuple[str, ...]
    gb_id: str | None  # "GB0124", from torch's graph-break registry
    url: str | None

    @classmethod
    def parse(cls, reason: str) -> GraphBreak:
        lines = [line.strip() for line in reason.strip().splitlines()]
        gb_type = lines[0] if lines else "graph break"
        explanation = next((line.removeprefix("Explanation:").strip() for line in lines
                            if line.startswith("Explanation:")), "")
        hints = tuple(line.removeprefix("Hint:").strip() for line in lines
                      if line.startswith("Hint:"))
        gb_id, url = _registered(gb_type)
        return cls(gb_type, explanation, hints, gb_id, url)

    def words(self, hint: bool = True) -> str:
        if self.gb_type.startswith(_DATA_DEPENDENT_JUMP):
            return "a branch on a tensor's value (dynamo cannot know which way it goes)"
        if self.gb_type == _STEPPED:
            return "dynamo compiled the graph up to this statement and runs it in Python " \
                f"({_STEPPED})"
        said = self.gb_type + (f" ({self.gb_id})" if self.gb_id else "")
        if self.explanation:
            said += f": {self.explanation}"
        return said + (f" Hint: {self.hints[0]}" if self.hints and hint else "")


def _registered(gb_type: str) -> tuple[str | None, str | None]:
    from torch._dynamo.exc import _load_gb_type_to_gb_id_map, get_gbid_documentation_link
    try:
        gb_id = _load_gb_type_to_gb_id_map().get(gb_type)
        return gb_id, get_gbid_documentation_link(gb_type) if gb_id else None
    except Exception:  # a torch without the registry: the break is still reported
        return None, None


@dataclass(frozen=True)
class CompileOutcome:
    """The module's compile status, its graph breaks as diagnostics, and the subgraphs
    dynamo compiled, each with the break that ended it."""

    status: str
    found: list[Diagnostic]
    graphs: list[TargetGraph] = field(default_factory=list)
    #: the subgraphs as data, and what dynamo read, for warming the next job's caches
    described: list[list[Any]] = field(default_factory=list)
    code: CodeNames = field(default_factory=CodeNames)


def compile_module(run: TargetRun, file: SourceFile, fullgraph: bool) -> CompileOutcome:
    import torch._dynamo
    code = CodeNames()
    try:
        with recording(code):
            explained = torch._dynamo.explain(run.instance)(*run.inputs, **run.kwargs)
    except Exception as error:
        return CompileOutcome("failed", [_raised_diagnostic(error, run, file)], code=code)
    described = _described(explained.graphs)
    breaks = [(GraphBreak.parse(reason.reason), spans_of_summaries(reason.user_stack or [], file))
              for reason in explained.break_reasons]
    breaks = _with_user_callers(breaks, run, file) if breaks else breaks
    graphs = _subgraphs(explained.graphs, [
        (graph_break, locate(spans, file, run.span)) for graph_break, spans in breaks], file)
    breaks = _distinct(breaks)
    if not breaks:
        return CompileOutcome(COMPILED, [], graphs, described, code)
    located = [(graph_break, locate(spans, file, run.span)) for graph_break, spans in breaks]
    found = [_break_diagnostic(at_place, run, file, fullgraph)
             for at_place in _by_place(located)]
    return CompileOutcome(f"{len(breaks)} graph break{'s' if len(breaks) != 1 else ''}",
                          found, graphs, described, code)


def _described(graphs: list[Any]) -> list[list[Any]]:
    found = []
    for gm in graphs:
        try:
            found.append(describe(gm))
        except Undescribable:
            continue
    return found


def _subgraphs(graphs: list[Any], located: list[_Located],
               file: SourceFile) -> list[TargetGraph]:
    """Each subgraph's rows; dynamo's i-th break ended its i-th graph. None when reading
    them fails (the breaks must still be reported)."""
    try:
        return [target_graph(gm, file, break_after=BreakInfo(
                    to_span(located[index][1].span), located[index][0].words(),
                    located[index][0].gb_id) if index < len(located) else None)
                for index, gm in enumerate(graphs)]
    except Exception:
        return []


def _raised_diagnostic(error: Exception, run: TargetRun, file: SourceFile) -> Diagnostic:
    where = locate(spans_of_exception(error), file, run.span)
    inside = _inside(where, file)
    item = diagnostic("FX309", f"compiling `{run.name}` raised{inside or ' here'}: "
                      f"{first_sentence(error)}", where.span, run.name)
    item.related.extend(where.related)
    return item


def _inside(where: Location, file: SourceFile) -> str:
    """`` inside `lib.fn` at `expr`, reached from here`` for a user's line that called into
    the library function that failed; empty for a failure at the user's own expression."""
    if where.library is None:
        return ""
    text = library_expression(where, file)
    return f" inside `{where.library}`" + (f" at `{text}`" if text else "") + \
        ", reached from here"


_Located = tuple[GraphBreak, Location]


def _by_place(located: list[_Located]) -> list[list[_Located]]:
    """Breaks reached from the same user line (inside a library) are one diagnostic there
    (one per code and range), which lists them all; each site is related information."""
    by_place: dict[tuple[str, int, int, int, int], list[_Located]] = {}
    for graph_break, where in located:
        span = where.span
        place = (span.file, span.line, span.col, span.end_line, span.end_col)
        by_place.setdefault(place, []).append((graph_break, where))
    return list(by_place.values())


_Break = tuple[GraphBreak, list[SourceSpan]]


def _distinct(breaks: list[_Break]) -> list[_Break]:
    """One per place and kind: a break in a library function is met again when dynamo
    compiles that function's frame on its own (then without the user's frames); dynamo's
    step past a statement is part of the break at that statement."""
    kept: dict[tuple[str, int, int, str], _Break] = {}
    for graph_break, spans in breaks:
        site = spans[-1] if spans else None
        key = (site.file, site.line, site.col, graph_break.gb_type) if site is not None else (
            "", len(kept), 0, graph_break.gb_type)
        kept.setdefault(key, (graph_break, spans))
    broken = {(key[0], key[1]) for key in kept if key[3] != _STEPPED}
    return [found for key, found in kept.items()
            if key[3] != _STEPPED or (key[0], key[1]) not in broken]


def _with_user_callers(breaks: list[_Break], run: TargetRun, file: SourceFile) -> list[_Break]:
    """A break whose stack is all library code gets the user's frames that called into it."""
    orphans = {(spans[0].file, spans[0].line) for _, spans in breaks
               if spans and not any(file.is_reportable(span.file) for span in spans)}
    if not orphans:
        return breaks
    callers = user_callers(run.call_eagerly, orphans, file.is_reportable)
    return [(graph_break, [*callers.get((spans[0].file, spans[0].line), ()), *spans]
             if spans else spans) for graph_break, spans in breaks]


def _break_diagnostic(at_place: list[_Located], run: TargetRun, file: SourceFile,
                      fullgraph: bool) -> Diagnostic:
    first, where = at_place[0]
    if len(at_place) == 1:
        message = f"graph break{_inside(where, file)}: {first.words()} (compiling `{run.name}`)"
    else:
        message = f"{len(at_place)} graph breaks here (compiling `{run.name}`): " + \
            several_breaks([(_inside(place, file), graph_break) for graph_break, place in at_place])
    item = diagnostic("FX301", message, where.span, run.name, gb_type=first.gb_type)
    if first.gb_id:
        item.data["gb_id"] = first.gb_id
    if first.url:
        item.data["help_url"] = first.url
    if fullgraph:
        item.severity = Severity.ERROR
    for _, place in at_place:
        item.related.extend(place.related)
    return item


def several_breaks(breaks: list[tuple[str, GraphBreak]]) -> str:
    """``(1) inside `f`: why. Hint: what to do; (2) inside `g`: as (1)``: each break's kind,
    explanation and hint said once, at its first break (wav2vec2's CTC loss breaks three
    times in one call, two of them for the same reason)."""
    said: dict[str, int] = {}
    hints: set[str] = set()
    parts = []
    for number, (inside, graph_break) in enumerate(breaks, 1):
        hint = bool(graph_break.hints) and graph_break.hints[0] not in hints
        hints.update(graph_break.hints[:1])
        words = graph_break.words(hint=False)
        earlier = said.setdefault(words, number)
        text = f"as ({earlier})" if earlier != number else graph_break.words(hint=hint)
        parts.append(f"({number}){inside}: {text}")
    return "; ".join(parts)


__all__ = ["COMPILED", "CompileOutcome", "GraphBreak", "compile_module", "several_breaks"]
