"""The cache's entries on disk: a corrupt, truncated or foreign one is a miss (the file is
analysed again and its entry rewritten), never an error; the size bound removes the entries
used longest ago; ``fxls cache info`` and ``fxls cache clean``."""

from __future__ import annotations

import json
import os
import threading
import zlib
from pathlib import Path

import pytest

from fxls.codes import CODES
from fxls.project.settings import load_settings
from fxls.report import Diagnostic, FileReport, Span
from fxls.result_cache import Fingerprint, ResultCache, cache_disabled, fingerprint
from tests.result_cache.checks import RecordedAnalysis, cache_command, cache_on

FILES = {"a.py": "import torch\n\nA = 1\n", "b.py": "import torch\n\nB = 2\n"}


def _entry(path: Path, cache: Path) -> Path:
    key = fingerprint(str(path), path.read_text(), load_settings(path))
    assert key is not None
    (found,) = cache.glob(f"results-*/*/{key.key}.report")
    return found


@pytest.fixture
def project(tmp_path: Path, recorded: RecordedAnalysis) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert recorded.analysed(str(tmp_path)) == ["a.py", "b.py"]
    return tmp_path


@pytest.mark.parametrize("damage", [
    pytest.param(lambda data, other: data[: len(data) // 2], id="truncated"),
    pytest.param(lambda data, other: b"\0" * len(data), id="corrupt"),
    pytest.param(lambda data, other: b"", id="empty"),
    pytest.param(lambda data, other: other, id="another-files-entry"),
    pytest.param(lambda data, other: _recoded(data, format=0), id="another-format"),
    pytest.param(lambda data, other: _recoded(data, report={"path": 3}), id="invalid-report"),
])
def test_a_damaged_or_foreign_entry_is_a_miss_and_is_rewritten(project, recorded, cache,
                                                               damage):
    entry, other = _entry(project / "a.py", cache), _entry(project / "b.py", cache)
    entry.write_bytes(damage(entry.read_bytes(), other.read_bytes()))
    assert recorded.analysed(str(project)) == ["a.py"]
    assert recorded.analysed(str(project)) == []


def _recoded(data: bytes, **changes: object) -> bytes:
    return zlib.compress(json.dumps({**json.loads(zlib.decompress(data)), **changes}).encode())


def _stored(cache: ResultCache, name: str, when: int) -> Fingerprint:
    key = Fingerprint(name * 64, f"/p/{name}.py", "x = 1\n")
    assert cache.store(key, FileReport(key.path))
    (entry,) = Path(cache.folder).glob(f"results-*/*/{key.key}.report")
    os.utime(entry, (when, when))
    return key


def test_past_the_size_bound_the_entries_used_longest_ago_are_removed(tmp_path):
    cache = ResultCache(str(tmp_path), limit_bytes=1 << 20)
    first, second, third = (_stored(cache, name, when) for name, when in
                            (("a", 1000), ("b", 2000), ("c", 3000)))
    assert cache.lookup(first) is not None  # used now: the most recent
    cache.limit_bytes = 2 * cache.usage().size_bytes // 3 + 1
    cache.trim()
    assert [cache.lookup(key) is not None for key in (first, second, third)] == \
        [True, False, True]


def test_a_failed_job_is_not_kept(tmp_path):
    cache = ResultCache(str(tmp_path), limit_bytes=1 << 20)
    key = Fingerprint("f" * 64, "/p/slow.py", "x = 1\n")
    timeout = Diagnostic("FX102", CODES["FX102"].severity, "analysis timed out after 30 s",
                         Span("/p/slow.py", 1, 1, 0, 5))
    assert not cache.store(key, FileReport(key.path, diagnostics=[timeout]))
    assert cache.usage().entries == 0


def test_cache_info_and_clean(tmp_path, recorded, monkeypatch):
    cache_on(tmp_path / "cache", monkeypatch)  # its own: the module's holds other entries
    (tmp_path / "a.py").write_text(FILES["a.py"], encoding="utf-8")
    assert recorded.analysed(str(tmp_path / "a.py")) == ["a.py"]
    info = cache_command("info").splitlines()
    assert info[:2] == [f"path: {tmp_path / 'cache'}", "entries: 1"]
    assert info[2].startswith("size: 0.0 MB (bound 200.0 MB, FXLS_CACHE_MAX_MB)")
    assert cache_command("clean").startswith("fxls: removed 1 cached results (0.0 MB) from ")
    assert cache_command("info").splitlines()[1] == "entries: 0"
    assert recorded.analysed(str(tmp_path / "a.py")) == ["a.py"]


def test_readers_see_a_whole_entry_or_none_while_another_process_writes(tmp_path):
    cache = ResultCache(str(tmp_path), limit_bytes=1 << 30)
    key = Fingerprint("e" * 64, "/p/big.py", "x = 1\n" * 200)
    reports = [FileReport(key.path, diagnostics=[
        Diagnostic("FX013", CODES["FX013"].severity, f"message {size} " * 50,
                   Span(key.path, line, line, 0, 5)) for line in range(1, 200)])
        for size in (1, 2)]
    writing = threading.Event()

    def write() -> None:
        for number in range(40):
            cache.store(key, reports[number % 2])
            writing.set()

    writer = threading.Thread(target=write)
    writer.start()
    writing.wait()
    seen = [cache.lookup(key) for _ in range(40)]
    writer.join()
    assert all(report is not None and len(report.diagnostics) == 199 for report in seen)


def test_the_suite_runs_without_the_cache():
    # tests/conftest.py: a test analyses afresh, and never writes to the user's cache
    assert cache_disabled()


@pytest.mark.parametrize(("value", "megabytes"), [
    ("0.5", 0.5), ("1024", 1024), ("", 200), ("0", 200), ("-3", 200), ("lots", 200),
    ("inf", 200), ("nan", 200),
])
def test_the_size_bound_is_the_users_variable_or_200_mb(monkeypatch, value, megabytes):
    monkeypatch.setenv("FXLS_CACHE_MAX_MB", value)
    assert ResultCache.default().limit_bytes == int(megabytes * 1024 * 1024)
