"""The texts of the open documents already analysed, by fingerprint: a save that changes
nothing the analysis reads is answered from the document's last report, without a job (the
export and compile tiers take seconds; an editor saves unchanged text on every Ctrl+S).

The fingerprint is the text, the settings the job gets, and the environment as far as the
server can see it cheaply: the size and modification time of every file the last report
points into (the project's other files and the libraries its diagnostics, related
information and graphs name). It errs on the side of analysing again; what it cannot see
(a data file the module reads at import) is picked up by the next save that changes the
text, and by the analyses that never skip: on open, after a dependency was saved or changed
on disk, a settings change, a restarted worker.

>>> texts = AnalysedTexts()
>>> from fxls.report import FileReport
>>> from fxls.project.settings import Settings
>>> from fxls.analysis_runs.request import AnalysisRequest
>>> request = AnalysisRequest("/p/net.py", "x = 1\\n", Settings())
>>> texts.remember("file:///p/net.py", request, FileReport("/p/net.py"))
>>> texts.reusable("file:///p/net.py", request).path
'/p/net.py'
>>> texts.reusable("file:///p/net.py", AnalysisRequest("/p/net.py", "x = 2\\n", Settings()))
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable

from fxls.analysis_runs.request import AnalysisRequest
from fxls.report import FileReport
from fxls.server.dependencies import report_files

#: codes of an analysis that did not finish as the text alone decides (crash, timeout,
#: limit; an import that failed, e.g. of a module not written yet): never reused
_NOT_REUSED = frozenset({"FX100", "FX102"})


def fingerprint(request: AnalysisRequest, files: Iterable[str]) -> str:
    digest = hashlib.sha256(request.source.encode("utf-8", "surrogatepass"))
    digest.update(json.dumps(request.settings.to_dict(), sort_keys=True, default=str).encode())
    for path in sorted(files):
        digest.update(f"\0{path}\0{_stat(path)}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _stat(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


class AnalysedTexts:
    """Per open document, its last complete report and the fingerprint of what it was
    computed from (the document's snapshot may be newer: an early report of a later text)."""

    def __init__(self) -> None:
        #: uri -> (fingerprint, the files it covers besides the document, the report)
        self._by_uri: dict[str, tuple[str, tuple[str, ...], FileReport]] = {}

    def reusable(self, uri: str, request: AnalysisRequest) -> FileReport | None:
        """``uri``'s last report if ``request`` is what it was computed from."""
        known = self._by_uri.get(uri)
        if known is None or fingerprint(request, known[1]) != known[0]:
            return None
        return known[2]

    def remember(self, uri: str, request: AnalysisRequest, report: FileReport) -> None:
        if any(item.code in _NOT_REUSED for item in report.diagnostics):
            self._by_uri.pop(uri, None)
            return
        own = os.path.realpath(request.path)
        files = tuple(sorted(path for path in report_files(report) if path != own))
        self._by_uri[uri] = (fingerprint(request, files), files, report)

    def forget(self, uri: str) -> None:
        self._by_uri.pop(uri, None)
