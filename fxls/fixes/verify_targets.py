"""Is a fix of an export or compile problem good? The edited text was analysed again with
the fix's torch tier (``Fix.tier``) re-run; the fix holds when:

- the diagnostic is gone from its place (its span carried through the fix's edits; a break
  the fix revealed further on, which dynamo's run stopped short of, is another one),
- no error code of the tiers that ran occurs more often (dynamo's deliberate break at the
  call of a function the fix disabled is a warning, unless ``fullgraph`` makes it an error),
- no class the tier had run is left without a run (it raises on its inputs now), and none
  that symbolic tracing targets traces worse; in a file too big for the job's time, a class
  other than the fixed one that the tier had no time for is not judged,
- every class's eager outputs on its example inputs are the same as before: a
  ``torch._check`` that is false there raises, a ``torch.where`` over a branch with a side
  effect computes something else.
"""

from __future__ import annotations

from collections import Counter

from fxls.codes import Severity, Target, target_of
from fxls.fixes.base import Fix, TextEdit
from fxls.report import Diagnostic, FileReport, ModuleReport, Span

#: dynamo's break at the call of a ``torch.compiler.disable``d function: what that fix asks for
_DELIBERATE_BREAK = "Skip calling `torch.compiler.disable()`d function"
_TOLERANCE = 1e-4


def target_fix_holds(before: FileReport, after: FileReport, fix: Fix) -> tuple[bool, str]:
    if any(d.code in ("FX100", "FX102") for d in after.diagnostics):
        return False, "the fixed file no longer runs"
    ran = _tiers_run(after)
    before_seen = [d for d in before.diagnostics if _seen_by(d, ran)]
    after_seen = [d for d in after.diagnostics if _seen_by(d, ran)]
    if fix.at is None or _still_at(fix, fix.at, after_seen):
        return False, f"{fix.code} is still reported there"
    new = _new_problem(before_seen, after_seen)
    if new is not None:
        return False, new
    worse = _worse_module(before.modules, after.modules, fix.tier, _fixed_module(before, fix))
    if worse is not None:
        return False, worse
    return True, f"verified by the {fix.tier} tier on the edited text"


def _tiers_run(report: FileReport) -> set[Target | None]:
    """The tracers whose problems the report can hold (None: fxls's own, every time)."""
    return {None, *(Target(name) for name in report.targets)}


def _seen_by(diagnostic: Diagnostic, ran: set[Target | None]) -> bool:
    return target_of(diagnostic.code) in ran


def _still_at(fix: Fix, at: Span, after: list[Diagnostic]) -> bool:
    lines = moved_lines(at, fix.edits)
    return any(d.code == fix.code and d.span.file == at.file and d.span.line in lines
               for d in after)


def moved_lines(span: Span, edits: list[TextEdit]) -> range:
    """The lines of the edited text where ``span``'s first line went: one line, shifted by
    the lines the edits before it added or removed; every line of the replacement when an
    edit rewrote it."""
    start, shift = (span.line, span.col), 0
    for edit in sorted(edits, key=lambda e: (e.line, e.col)):
        if (edit.end_line, edit.end_col) <= start:
            shift += edit.new_text.count("\n") - (edit.end_line - edit.line)
        elif (edit.line, edit.col) <= start:
            first = edit.line + shift
            return range(first, first + edit.new_text.count("\n") + 1)
    return range(span.line + shift, span.line + shift + 1)


def _new_problem(before: list[Diagnostic], after: list[Diagnostic]) -> str | None:
    """An error more than before (a break the fix only moved or revealed is a warning
    unless ``fullgraph`` makes every break one)."""
    if any(d.data.get("gb_type") == _DELIBERATE_BREAK and d.severity is Severity.ERROR
           for d in after):
        return "with fullgraph, the disabled function still breaks the graph"
    errors_before = Counter(d.code for d in before if d.severity is Severity.ERROR)
    errors_after = Counter(d.code for d in after if d.severity is Severity.ERROR)
    for code, count in errors_after.items():
        if count > errors_before[code]:
            return f"the fix introduces {code}"
    return None


def _fixed_module(before: FileReport, fix: Fix) -> str | None:
    """The class whose diagnostic ``fix`` fixes."""
    return next((d.module for d in before.diagnostics if d.code == fix.code
                 and fix.at is not None and d.span.key() == fix.at.key()), None)


def _worse_module(before: list[ModuleReport], after: list[ModuleReport],
                  tier: str | None, fixed_module: str | None) -> str | None:
    by_name = {module.name: module for module in after}
    for module in before:
        fixed = by_name.get(module.name)
        if fixed is None:
            return f"{module.name} is gone"
        if module.name != fixed_module and _out_of_time(fixed, tier):
            continue  # the job's time ran out before it (a big file): nothing to judge by
        if _targets_symbolic_trace(module) and fixed.status.rank < module.status.rank:
            return f"{module.name} now traces {fixed.status}"
        status, now = module.targets.get(tier or ""), fixed.targets.get(tier or "")
        if status is not None and not status.startswith("not run") and (
                now is None or now.startswith("not run")):
            return f"{module.name} is not run by {tier} any more ({now})"
        if module.eager_outputs is not None and fixed.eager_outputs is None:
            return f"{module.name} raises on its example inputs after the fix"
        if not _same(module.eager_outputs, fixed.eager_outputs):
            return f"{module.name} computes different outputs after the fix"
    return None


def _out_of_time(module: ModuleReport, tier: str | None) -> bool:
    # the tier budget's reason (``analysis.pipeline.tier_budget.out_of_time``)
    return module.targets.get(tier or "", "").startswith("not run: out of time")


def _targets_symbolic_trace(module: ModuleReport) -> bool:
    return not module.targets or Target.SYMBOLIC_TRACE.value in module.targets


def _same(before: list[float] | None, after: list[float] | None) -> bool:
    """Equal within a relative tolerance; outputs known before must be known after (the
    module may not start raising on its inputs)."""
    if before is None:
        return True
    if after is None or len(before) != len(after):
        return False
    return all(abs(a - b) <= _TOLERANCE * max(1.0, abs(a), abs(b))
               for a, b in zip(before, after, strict=True))


def verification_targets(before: FileReport, tier: str) -> tuple[str, ...]:
    """The targets to re-analyse a fix's edited text for: the file's, without the other
    torch tier when the file targets this one (its seconds are spared; a class's
    ``# fxls: targets`` pragma still decides for that class). When only a class's pragma
    targets the tier, the file's targets as they were: the other classes must not gain it."""
    if tier not in before.targets:
        return tuple(before.targets)
    torch_tiers = (Target.EXPORT.value, Target.COMPILE.value)
    return tuple(name for name in before.targets if name == tier or name not in torch_tiers)
