"""Only the targeted tracers' diagnostics are reported (SPEC: Targets): a class that
targets export or compile alone gets no symbolic-trace code. A leaf of the pipeline: the
findings apply it when they finish a report."""

from __future__ import annotations

from fxls.codes import Target, target_of
from fxls.report import Diagnostic, FileReport


def untargeted(report: FileReport, items: list[Diagnostic]) -> list[Diagnostic]:
    """``items`` without the symbolic-trace problems of classes that do not target it."""
    skipping = {module_report.name for module_report in report.modules
                if module_report.targets
                and Target.SYMBOLIC_TRACE.value not in module_report.targets}
    if not skipping:
        return items
    return [item for item in items
            if not (item.module in skipping and target_of(item.code) is Target.SYMBOLIC_TRACE)]
