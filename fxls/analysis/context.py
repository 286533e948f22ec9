"""What a rule sees: one traced module, with everything the pipeline learned about it.

The pipeline (``fxls.analysis.pipeline``) builds a :class:`ModuleContext` per traced module
and hands it to every rule in ``fxls.analysis.rules``; a rule returns diagnostics and
never raises (the pipeline turns a crashing rule into an FX004 about fxls itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fxls.analysis.diagnostics import diagnostic
from fxls.project.settings import Settings
from fxls.report import Diagnostic, Span

if TYPE_CHECKING:
    import torch

    from fxcore.graph_module import GraphModule
    from fxcore.recovering import CollectedTrace
    from fxcore.source import SourceSpan


@dataclass
class TraceTimeCall:
    """A call that ran during tracing but leaves no node (print, logging, random, time)."""

    what: str  # e.g. "print", "logging.info", "random.random", "time.time"
    span: SourceSpan  # of the user call
    #: the user frames down to it, outermost first (a library helper's call is placed at
    #: the line of the analysed file that reached it)
    stack: tuple[SourceSpan, ...] = ()


@dataclass
class ModuleContext:
    path: str  # the analysed file (absolute)
    source: str  # its text
    class_name: str
    module: torch.nn.Module  # the constructed instance (never mutated by rules)
    trace: CollectedTrace
    graph_module: GraphModule | None  # None when the trace failed before a graph existed
    example_inputs: tuple[Any, ...] | None  # positional forward inputs, when known
    concrete_args: dict[str, Any] | None
    settings: Settings
    trace_time_calls: list[TraceTimeCall] = field(default_factory=list)
    #: is this file (or another file of the workspace) one whose spans we report?
    is_reportable_file: Callable[[str], bool] = lambda _path: True


Rule = Callable[[ModuleContext], Iterable[Diagnostic]]


def run_rule(rule: Callable[..., Iterable[Diagnostic]], ctx: ModuleContext,
             class_span: SourceSpan | Span, *args: Any) -> list[Diagnostic]:
    """``rule(ctx, *args)``'s diagnostics. A rule that raises is a bug in fxls, not in the
    user's model: it becomes one FX004 at the class naming the rule, and the other rules'
    diagnostics are kept."""
    try:
        return list(rule(ctx, *args))
    except Exception as error:
        name = getattr(rule, "__name__", repr(rule))
        return [diagnostic(
            "FX004", f"fxls's check `{name}` failed on `{ctx.class_name}` "
            f"({type(error).__name__}: {error}); this is a bug in fxls, the other checks ran",
            class_span, ctx.class_name, rule=name)]
