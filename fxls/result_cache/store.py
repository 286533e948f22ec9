"""The result cache's entries on disk: one file per fingerprint holding the file's report
in its wire format (``FileReport.to_dict``), read back through the same validation as a
worker's report (``check_report``).

An entry that is corrupt, truncated, of another format or of another fingerprint (a file
copied in) is a miss, never an error; the fresh result then replaces it. Entries are
written to a temporary file and renamed into place, so two fxls processes at once each
read a whole entry or none. Past the size bound, the entries used longest ago are removed:
a hit sets its entry's time, which is the time of its last use (file systems mounted
``noatime`` or ``relatime`` do not keep access times themselves).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from fxls.project.files_read import MAX_FILES as MAX_FILES_READ
from fxls.project.files_read import file_digest
from fxls.project.source_text import source_text
from fxls.report import MAX_DIAGNOSTICS, FileReport, InvalidReport, check_report
from fxls.result_cache.file_fingerprint import CACHE_FORMAT, Fingerprint
from fxls.result_cache.location import cache_folder, size_limit_bytes

#: an entry larger than this, compressed or not, is not read
MAX_ENTRY_BYTES = 256 << 20
#: a temporary file older than this was left by a process that died while writing
_STALE_TEMPORARY_S = 3600.0
_ENTRY_SUFFIX = ".report"
_TEMPORARY_SUFFIX = ".tmp"
#: the codes of a job that did not finish (timeout, crash, memory): the machine's state,
#: not the file's, so never cached
_JOB_FAILURES = frozenset({"FX102"})


@dataclass(frozen=True, slots=True)
class CacheUsage:
    entries: int
    size_bytes: int


class ResultCache:
    """The entries in ``folder``, kept under ``limit_bytes`` in all."""

    def __init__(self, folder: str, limit_bytes: int) -> None:
        self.folder = folder
        self.limit_bytes = limit_bytes
        self._entries = os.path.join(folder, f"results-{CACHE_FORMAT}")
        #: bytes written since the last trim: a trim every sixteenth of the bound
        self._written = 0

    @classmethod
    def default(cls) -> ResultCache:
        """The user's cache (``location``)."""
        return cls(cache_folder(), size_limit_bytes())

    def lookup(self, fingerprint: Fingerprint) -> FileReport | None:
        """The report stored for ``fingerprint``, checked against its document; None when
        there is none, or none that can be used."""
        path = self._entry_path(fingerprint.key)
        entry = _read_entry(path)
        if (not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT
                or entry.get("key") != fingerprint.key):
            return None
        try:
            checked = check_report(entry.get("report"), path=os.path.realpath(fingerprint.path),
                                   text=source_text(fingerprint.source))
        except (InvalidReport, ValueError, TypeError, RecursionError):
            return None
        if not _reads_unchanged(checked.report.reads):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # its last use, for the size bound
        checked.report.path = fingerprint.path
        return checked.report

    def store(self, fingerprint: Fingerprint, report: FileReport) -> bool:
        """Keep ``report`` as the result of ``fingerprint``; False when it was not kept (a
        failed job's report, or the cache cannot be written: never an error)."""
        if not cacheable(report):
            return False
        entry = {"format": CACHE_FORMAT, "key": fingerprint.key, "report": report.to_dict()}
        data = zlib.compress(json.dumps(entry, separators=(",", ":")).encode(), 1)
        path = self._entry_path(fingerprint.key)
        if len(data) > MAX_ENTRY_BYTES or not _write_atomically(path, data, self.folder):
            return False
        self._written += len(data)
        if self._written > self.limit_bytes // 16:
            self.trim()
        return True

    def trim(self) -> None:
        """Remove the entries used longest ago until the rest fit the size bound, and the
        temporary files of writers that died."""
        self._written = 0
        entries, total = [], 0
        for path, info in self._files():
            if path.endswith(_TEMPORARY_SUFFIX):
                if info.st_mtime < time.time() - _STALE_TEMPORARY_S:
                    _remove(path)
                continue
            entries.append((info.st_mtime_ns, info.st_size, path))
            total += info.st_size
        for _, size, path in sorted(entries):
            if total <= self.limit_bytes:
                break
            _remove(path)
            total -= size

    def usage(self) -> CacheUsage:
        """How many entries there are (of every format) and their size."""
        sizes = [info.st_size for path, info in self._files(every_format=True)
                 if path.endswith(_ENTRY_SUFFIX)]
        return CacheUsage(len(sizes), sum(sizes))

    def clean(self) -> CacheUsage:
        """Remove every entry (of every format); what was removed."""
        removed = self.usage()
        for path, _ in self._files(every_format=True):
            _remove(path)
        for folder in self._entry_folders(every_format=True):
            for sub in [*(os.path.join(folder, name) for name in _names(folder)), folder]:
                with contextlib.suppress(OSError):
                    os.rmdir(sub)  # only when empty: another fxls may be writing there
        return removed

    def _entry_path(self, key: str) -> str:
        return os.path.join(self._entries, key[:2], key + _ENTRY_SUFFIX)

    def _entry_folders(self, every_format: bool = False) -> list[str]:
        if not every_format:
            return [self._entries]
        return [os.path.join(self.folder, name) for name in _names(self.folder)
                if name.startswith("results-")]

    def _files(self, every_format: bool = False) -> Iterator[tuple[str, os.stat_result]]:
        for folder in self._entry_folders(every_format):
            for sub in _names(folder):
                for name in _names(os.path.join(folder, sub)):
                    path = os.path.join(folder, sub, name)
                    if name.endswith((_ENTRY_SUFFIX, _TEMPORARY_SUFFIX)):
                        with contextlib.suppress(OSError):
                            yield path, os.stat(path, follow_symlinks=False)


def cacheable(report: FileReport) -> bool:
    """A report the fingerprint decides: not a job that failed, not one whose diagnostics
    were cut to the limit (read back, the cut would be said twice), not one whose job could
    not list the files it read."""
    return (len(report.diagnostics) <= MAX_DIAGNOSTICS and report.reads is not None
            and len(report.reads) <= MAX_FILES_READ
            and not any(d.code in _JOB_FAILURES for d in report.diagnostics))


def _reads_unchanged(reads: dict[str, str] | None) -> bool:
    """Every file the analysis read (a module imported by a computed name, a data file) has
    the bytes it had then."""
    return reads is not None and len(reads) <= MAX_FILES_READ and all(
        file_digest(path) == digest for path, digest in reads.items())


def _read_entry(path: str) -> object:
    """The decoded entry at ``path``; None when it is missing or unreadable."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ENTRY_BYTES + 1)
        inflate = zlib.decompressobj()
        text = inflate.decompress(data, MAX_ENTRY_BYTES)
        if len(data) > MAX_ENTRY_BYTES or inflate.unconsumed_tail or not inflate.eof:
            return None
        return json.loads(text)
    except (OSError, zlib.error, ValueError, RecursionError):
        return None


def _write_atomically(path: str, data: bytes, top: str) -> bool:
    """Write ``path`` whole or not at all; the folders made on the way below and including
    ``top`` are the user's alone."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(os.path.dirname(top), exist_ok=True)  # ~/.cache: the usual mode
        for level in _folders_down(top, folder):
            with contextlib.suppress(FileExistsError):
                os.mkdir(level, 0o700)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=_TEMPORARY_SUFFIX)
    except OSError:
        return False
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        _remove(temporary)
        return False
    return True


def _folders_down(top: str, folder: str) -> list[str]:
    """``top`` and the folders below it down to ``folder``, top first."""
    levels = [folder]
    while levels[-1] != top and os.path.dirname(levels[-1]) != levels[-1]:
        levels.append(os.path.dirname(levels[-1]))
    return levels[::-1]


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []
