"""The diagnostics of one file: one per (code, span) as its classes are analysed, then
finished for the report (network refusals added, select/ignore and the ignore pragmas
applied, sorted)."""

from __future__ import annotations

from dataclasses import replace

from fxls.analysis.network import refusal_diagnostics
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.targeted import untargeted
from fxls.codes import code_selected, parse_code_list
from fxls.report import Diagnostic, FileReport, ModuleReport, RelatedInfo

_Key = tuple[str, tuple[str, int, int, int, int]]


class Findings:
    """Adds the diagnostics of each analysed module to ``report``: a problem already
    reported from another module (a submodule traced from several roots) gains a related
    link to this module instead of a copy."""

    def __init__(self, report: FileReport) -> None:
        self._report = report
        self._first: dict[_Key, Diagnostic] = {}

    def add(self, module_report: ModuleReport, found: list[Diagnostic]) -> None:
        for item in found:
            first = self._first.setdefault((item.code, item.span.key()), item)
            if first is item:
                self._report.diagnostics.append(item)
            elif module_report.span is not None and item.module != first.module:
                first.related.append(RelatedInfo(
                    module_report.span, f"also reached when tracing `{item.module}`"))
                first.data.setdefault("also_reached_from", []).append(item.module)

    def forget_module(self, name: str) -> None:
        """Drop the diagnostics of the module ``name``: it is being analysed again."""
        self._report.diagnostics[:] = [d for d in self._report.diagnostics if d.module != name]
        for key in [k for k, d in self._first.items() if d.module == name]:
            del self._first[key]


def finished(report: FileReport, file: SourceFile) -> FileReport:
    """Apply select/ignore and ignore pragmas; one diagnostic per (code, range), sorted."""
    report.diagnostics.extend(refusal_diagnostics(file.filename, file.settings.project.root))
    select = parse_code_list(file.settings.diagnostics.select)
    ignore = parse_code_list(file.settings.diagnostics.ignore)
    kept = []
    keys = set()
    for item in untargeted(report, report.diagnostics):
        if not code_selected(item.code, select, ignore):
            continue
        if item.span.file == file.filename and file.pragmas.is_ignored(item.span.line, item.code):
            continue
        key = (item.code, item.span.key())
        if key in keys:
            continue
        keys.add(key)
        kept.append(item)
    kept.sort(key=lambda d: (d.span.file, d.span.line, d.span.col, d.code))
    report.diagnostics = kept
    return report


def finished_so_far(report: FileReport, file: SourceFile) -> FileReport:
    """A finished copy of ``report`` as it is now (sent early; the analysis goes on)."""
    return finished(replace(report, diagnostics=list(report.diagnostics)), file)
