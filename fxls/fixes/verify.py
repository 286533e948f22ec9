"""Is a fix good? Compare the report of the fixed text with the report it was made from.

A fix is offered only if, after applying it and re-tracing in the worker:
- the diagnostic it targets is gone (its code occurs fewer times),
- no error-severity code occurs more often than before,
- no module's trace status got worse (traced > partial > failed > skipped), none vanished,
- and, when both versions could run the module on example inputs, the graph outputs agree
  (the analysis reports FX014 when graph and eager disagree; a fix must not add one).

A fix of an export or compile problem is judged by that tier's re-run instead
(``fxls.fixes.verify_targets``).
"""

from __future__ import annotations

from collections import Counter

from fxls.codes import Severity
from fxls.fixes.base import Fix
from fxls.fixes.verify_targets import target_fix_holds
from fxls.report import FileReport, TraceStatus


def fix_holds(before: FileReport, after: FileReport, fix: Fix) -> tuple[bool, str]:
    """(accepted, reason) for ``fix`` given the reports before and after applying it."""
    if fix.tier is not None:
        return target_fix_holds(before, after, fix)
    if any(d.code in ("FX100", "FX102") for d in after.diagnostics):
        return False, "the fixed file no longer runs"
    count_before = Counter(d.code for d in before.diagnostics)
    count_after = Counter(d.code for d in after.diagnostics)
    if count_after[fix.code] >= count_before[fix.code]:
        return False, f"{fix.code} is still reported"
    error_codes = {d.code for d in after.diagnostics if d.severity is Severity.ERROR}
    for code in error_codes:
        if code != fix.code and count_after[code] > count_before[code]:
            return False, f"the fix introduces {code}"
    statuses_after = {m.name: m.status for m in after.modules}
    for module in before.modules:
        status = statuses_after.get(module.name)
        if status is None:
            return False, f"{module.name} is gone"
        if status is TraceStatus.SKIPPED and module.name == fix.leaf_class:
            continue  # marked as a leaf on purpose: it is no longer traced on its own
        if status.rank < module.status.rank:
            return False, f"{module.name} now traces {status}"
    signatures_after = {m.name: m.output_signature for m in after.modules}
    for module in before.modules if fix.expect_same_outputs else ():
        if not _same_outputs(module.output_signature, signatures_after.get(module.name)):
            return False, f"{module.name} computes different outputs after the fix"
    return True, "verified by re-tracing"


def _same_outputs(before: list[float] | None, after: list[float] | None) -> bool:
    if before is None or after is None:
        return True  # nothing to compare: no example inputs, or the graph was partial
    if len(before) != len(after):
        return False
    pairs = zip(before, after, strict=True)
    return all(abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b)) for a, b in pairs)
