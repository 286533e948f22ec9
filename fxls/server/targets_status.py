"""What the editor's status item says of a document's targets (SPEC: Targets): the tracers
the server analysed its classes for, and why. Sent with ``fxls/analysisDone``, whose
complete report is the one those targets come from."""

from __future__ import annotations

from typing import Any

from fxls.codes import Target
from fxls.report import FileReport


def targets_status(report: FileReport) -> dict[str, Any]:
    """``{"targets": [...], "targetsBecause": "..."}``: the file's targets and, where a
    class's ``# fxls: targets`` pragma chose others, that class's too (a file analysed for
    symbolic tracing whose one class targets compile is analysed for both)."""
    chosen = list(report.targets)
    pragma_classes = []
    for module in report.modules:
        if module.targets and list(module.targets) != chosen:
            pragma_classes.append(f"{module.name}: {', '.join(module.targets)} (its pragma)")
    named = {name for module in report.modules for name in module.targets} | set(chosen)
    because = "; ".join(part for part in [report.targets_because or "", *pragma_classes] if part)
    return {"targets": [target.value for target in Target if target.value in named],
            "targetsBecause": because or None}
