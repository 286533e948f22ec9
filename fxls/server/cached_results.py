"""The result cache in the editor (``fxls.result_cache``): a document opened with the text,
workspace dependencies, settings and environment of a stored result is shown that result at
once, and every fresh complete report is stored for the next open.

A fingerprint reads the workspace files the document imports (and, the first time in a
process, fxls's own sources: tens of ms), so fingerprints and entries are made in a thread,
never on the event loop. The cache never fails an analysis: whatever goes wrong in it is a
miss, logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from fxls.analysis_runs.request import AnalysisRequest
from fxls.report import FileReport
from fxls.result_cache import Fingerprint, ResultCache, cache_disabled, fingerprint

log = logging.getLogger("fxls.server")


@dataclass(frozen=True, slots=True)
class CachedLookup:
    """A document's fingerprint (None: not cached) and, when it was looked up, its report."""

    fingerprint: Fingerprint | None
    report: FileReport | None
    elapsed_ms: float


class CachedResults:
    """The user's result cache as the server uses it; ``cache`` None: turned off."""

    def __init__(self, cache: ResultCache | None) -> None:
        self._cache = cache

    @classmethod
    def from_environment(cls) -> CachedResults:
        """The user's cache, unless ``FXLS_NO_CACHE`` turns it off."""
        return cls(None if cache_disabled() else ResultCache.default())

    @property
    def enabled(self) -> bool:
        return self._cache is not None

    async def look_up(self, request: AnalysisRequest, python: str, *,
                      read: bool) -> CachedLookup:
        """The fingerprint of ``request`` run by ``python`` and, if ``read``, the report
        stored for it."""
        if self._cache is None:
            return CachedLookup(None, None, 0.0)
        return await asyncio.to_thread(self._look_up, self._cache, request, python, read)

    async def keep(self, key: Fingerprint, report: FileReport) -> None:
        """Store the fresh ``report`` of the document whose fingerprint is ``key``."""
        if self._cache is None:
            return
        try:
            await asyncio.to_thread(self._cache.store, key, report)
        except Exception:
            log.exception("the result cache could not store %s", key.path)

    @staticmethod
    def _look_up(cache: ResultCache, request: AnalysisRequest, python: str,
                 read: bool) -> CachedLookup:
        start = time.perf_counter()
        try:
            key = fingerprint(request.path, request.source, request.settings, python=python)
            report = cache.lookup(key) if read and key is not None else None
        except Exception:
            log.exception("the result cache could not look up %s", request.path)
            key, report = None, None
        return CachedLookup(key, report, (time.perf_counter() - start) * 1000)


def lookup_message(uri: str, lookup: CachedLookup, shown: bool) -> str:
    """The log line saying what the cache had for ``uri`` on open."""
    if lookup.fingerprint is None:
        outcome = "not cacheable (its environment or dependencies cannot be fingerprinted)"
    elif lookup.report is None:
        outcome = "not in the result cache"
    elif shown:
        outcome = "shown from the result cache until its analysis ends"
    else:
        outcome = "in the result cache, but its analysis answered first"
    return f"fxls: {uri}: {outcome} ({lookup.elapsed_ms:.0f} ms)"
