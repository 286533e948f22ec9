"""What a file's report says of its passes beyond their runs: a pass that wants options
fxls found no value for, and what a pass raised on a representative (stand-in) graph."""

from __future__ import annotations

from fxls.analysis.diagnostics import to_span
from fxls.analysis.passes.discovery import PassSpec
from fxls.codes import Severity
from fxls.report import FileReport, PassGraphRun, PassReport


def with_passes_not_run(specs: list[PassSpec], reports: list[PassReport],
                        labels: list[str]) -> list[PassReport]:
    """The reports in the passes' order, a pass whose options fxls found no value for
    included, with why it did not run."""
    ran = iter(reports)
    found = []
    for spec in specs:
        if not spec.missing:
            found.append(next(ran))
            continue
        wanted = ", ".join(f"`{name}`" for name in spec.missing)
        problem = (f"not run: it wants options besides the graph ({wanted}), and the file "
                   "calls it with none fxls can evaluate")
        found.append(PassReport(spec.name, spec.kind, to_span(spec.span), [
            PassGraphRun(label, problem=problem) for label in labels]))
    return found


def raised_on_stand_ins_as_information(report: FileReport, labels: set[str]) -> None:
    """FX004 on a representative graph is information: a stand-in graph is none of the
    user's, and a pass may refuse it by design."""
    for item in report.diagnostics:
        if item.code == "FX004" and item.data.get("graph") in labels:
            item.severity = Severity.INFORMATION
            item.data["stand_in"] = True
