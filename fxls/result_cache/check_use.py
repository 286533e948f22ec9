"""``fxls check``'s use of the result cache: each file looked up before the run, each fresh
report kept after it, and how many came from the cache."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fxls.analysis_runs.request import AnalysisRequest
from fxls.report import FileReport
from fxls.result_cache.dependencies import WorkspaceFiles
from fxls.result_cache.file_fingerprint import Fingerprint, fingerprint
from fxls.result_cache.store import ResultCache


@dataclass(frozen=True, slots=True)
class Lookup:
    """A file's fingerprint (None: it cannot be cached) and its cached report, if any."""

    fingerprint: Fingerprint | None
    report: FileReport | None


class CachedCheck:
    """One ``fxls check`` run's lookups and stores (one snapshot of the workspace)."""

    def __init__(self, cache: ResultCache, python: str) -> None:
        self.cache = cache
        self.python = python
        self.hits = 0
        self._files = WorkspaceFiles()

    async def reports(
        self, requests: list[AnalysisRequest],
        analyse: Callable[[list[AnalysisRequest]], Awaitable[list[FileReport]]],
        on_hit: Callable[[str], None],
    ) -> list[FileReport]:
        """The reports of ``requests`` in order: those in the cache read from it (each given
        to ``on_hit``), the others by one call of ``analyse`` and kept."""
        lookups = [self.look_up(request) for request in requests]
        for lookup in lookups:
            if lookup.report is not None:
                on_hit(lookup.report.path)
        fresh = iter(await analyse([r for r, lookup in zip(requests, lookups, strict=True)
                                    if lookup.report is None]))
        reports = []
        for lookup in lookups:
            report = lookup.report
            if report is None:
                report = next(fresh)
                self.keep(lookup, report)
            reports.append(report)
        return reports

    def look_up(self, request: AnalysisRequest) -> Lookup:
        key = fingerprint(request.path, request.source, request.settings, python=self.python,
                          files=self._files)
        report = self.cache.lookup(key) if key is not None else None
        self.hits += report is not None
        return Lookup(key, report)

    def keep(self, lookup: Lookup, report: FileReport) -> None:
        """Store the fresh ``report`` of a file that missed."""
        if lookup.fingerprint is not None:
            self.cache.store(lookup.fingerprint, report)

    def summary(self, files: int) -> str:
        """The stderr line saying how many files came from the cache (none: nothing)."""
        if not self.hits:
            return ""
        return (f"fxls: {self.hits} of {files} files from the cache (unchanged since they "
                f"were checked; --no-cache analyses them again)\n")
