"""The compile tracer: each built instance through dynamo (``torch._dynamo.explain``, a
backend that compiles nothing) on its example inputs; every graph break at the user's line
(FX301: its reason, its graph-break type ``GBnnnn`` with torch's page, torch's hint).

``explain`` runs the whole forward, resuming after each break, so one run finds them all.
With ``fullgraph`` targeted a break is an error (``torch.compile(fullgraph=True)`` raises
on it), otherwise a warning: the model compiles, in pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.library_entry import user_callers
from fxls.analysis.pipeline.target_inputs import TargetRun
from fxls.analysis.pipeline.user_frames import locate, spans_of_exception, spans_of_summaries
from fxls.codes import Severity
from fxls.report import Diagnostic

COMPILED = "compiled"
#: dynamo's name for a jump (``if``, ``while``, ``and``) on a tensor's value
_DATA_DEPENDENT_JUMP = "generic_jump"


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

    def words(self) -> str:
        if self.gb_type.startswith(_DATA_DEPENDENT_JUMP):
            return "a branch on a tensor's value (dynamo cannot know which way it goes)"
        said = self.gb_type + (f" ({self.gb_id})" if self.gb_id else "")
        if self.explanation:
            said += f": {self.explanation}"
        return said + (f" Hint: {self.hints[0]}" if self.hints else "")


def _registered(gb_type: str) -> tuple[str | None, str | None]:
    from torch._dynamo.exc import _load_gb_type_to_gb_id_map, get_gbid_documentation_link
    try:
        gb_id = _load_gb_type_to_gb_id_map().get(gb_type)
        return gb_id, get_gbid_documentation_link(gb_type) if gb_id else None
    except Exception:  # a torch without the registry: the break is still reported
        return None, None


def compile_module(run: TargetRun, file: SourceFile,
                   fullgraph: bool) -> tuple[str, list[Diagnostic]]:
    """The module's compile status and its graph breaks as diagnostics."""
    import torch._dynamo
    try:
        explained = torch._dynamo.explain(run.instance)(*run.inputs)
    except Exception as error:
        where = locate(spans_of_exception(error), file, run.span)
        text = str(error).strip().splitlines()
        item = diagnostic("FX309", f"compiling `{run.name}` raised here: "
                          f"{type(error).__name__}: {text[0] if text else ''}",
                          where.span, run.name)
        item.related.extend(where.related)
        return "failed", [item]
    breaks = _distinct([(GraphBreak.parse(reason.reason),
                         spans_of_summaries(reason.user_stack or [], file))
                        for reason in explained.break_reasons])
    breaks = _with_user_callers(breaks, run, file)
    found = [_break_diagnostic(graph_break, spans, run, file, fullgraph)
             for graph_break, spans in breaks]
    if not found:
        return COMPILED, []
    return f"{len(found)} graph break{'s' if len(found) != 1 else ''}", _one_per_place(found)


def _one_per_place(found: list[Diagnostic]) -> list[Diagnostic]:
    """Breaks inside a library reached from the same user line are one diagnostic there (one
    per code and range), which lists them all; each site is related information."""
    by_place: dict[tuple[str, int, int, int, int], list[Diagnostic]] = {}
    for item in found:
        by_place.setdefault(item.span.key(), []).append(item)
    merged = []
    for items in by_place.values():
        first = items[0]
        if len(items) > 1:
            first.message = f"{len(items)} graph breaks here: " + "; ".join(
                f"({number}) {item.message}" for number, item in enumerate(items, 1))
            for item in items[1:]:
                first.related.extend(item.related)
                if item.severity is Severity.ERROR:
                    first.severity = Severity.ERROR
        merged.append(first)
    return merged


_Break = tuple[GraphBreak, list[SourceSpan]]


def _distinct(breaks: list[_Break]) -> list[_Break]:
    """One per place and kind: a break in a library function is met again when dynamo
    compiles that function's frame on its own (then without the user's frames)."""
    kept: dict[tuple[str, int, int, str], _Break] = {}
    for graph_break, spans in breaks:
        site = spans[-1] if spans else None
        key = (site.file, site.line, site.col, graph_break.gb_type) if site is not None else (
            "", len(kept), 0, graph_break.gb_type)
        kept.setdefault(key, (graph_break, spans))
    return list(kept.values())


def _with_user_callers(breaks: list[_Break], run: TargetRun, file: SourceFile) -> list[_Break]:
    """A break whose stack is all library code gets the user's frames that called into it."""
    orphans = {(spans[0].file, spans[0].line) for _, spans in breaks
               if spans and not any(file.is_reportable(span.file) for span in spans)}
    if not orphans:
        return breaks
    callers = user_callers(run.instance, run.inputs, orphans, file.is_reportable)
    return [(graph_break, [*callers.get((spans[0].file, spans[0].line), ()), *spans]
             if spans else spans) for graph_break, spans in breaks]


def _break_diagnostic(graph_break: GraphBreak, spans: list[SourceSpan], run: TargetRun,
                      file: SourceFile, fullgraph: bool) -> Diagnostic:
    where = locate(spans, file, run.span)
    inside = f" inside `{where.library}`, reached from here" if where.library else ""
    item = diagnostic("FX301", f"graph break{inside}: {graph_break.words()} "
                      f"(compiling `{run.name}`)", where.span, run.name,
                      gb_type=graph_break.gb_type)
    if graph_break.gb_id:
        item.data["gb_id"] = graph_break.gb_id
    if graph_break.url:
        item.data["help_url"] = graph_break.url
    if fullgraph:
        item.severity = Severity.ERROR
    item.related.extend(where.related)
    return item


__all__ = ["COMPILED", "GraphBreak", "compile_module"]
