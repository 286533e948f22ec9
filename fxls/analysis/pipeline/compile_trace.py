"""The compile tracer: each built instance through dynamo (``torch._dynamo.explain``, a
backend that compiles nothing) on its example inputs; every graph break at the user's line
(FX301: its reason, its graph-break type ``GBnnnn`` with torch's page, torch's hint).

``explain`` runs the whole forward, resuming after each break, so one run finds them all.
With ``fullgraph`` targeted a break is an error (``torch.compile(fullgraph=True)`` raises
on it), otherwise a warning: the model compiles, in pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import SourceFile
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
    found = _unique([_break_diagnostic(reason.reason, reason.user_stack, run, file, fullgraph)
                     for reason in explained.break_reasons])
    if not found:
        return COMPILED, []
    return f"{len(found)} graph break{'s' if len(found) != 1 else ''}", found


def _break_diagnostic(reason: str, user_stack: list, run: TargetRun, file: SourceFile,
                      fullgraph: bool) -> Diagnostic:
    graph_break = GraphBreak.parse(reason)
    where = locate(spans_of_summaries(user_stack or [], file), file, run.span)
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


def _unique(found: list[Diagnostic]) -> list[Diagnostic]:
    """A break met again (a loop, a resumed frame) is reported once."""
    seen: set[tuple[str, int, int, str]] = set()
    kept = []
    for item in found:
        key = (item.span.file, item.span.line, item.span.col, item.message)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


__all__ = ["COMPILED", "GraphBreak", "compile_module"]
