"""Where a job was running when it was ended, told by its watchdog thread, not by a signal:
code that ignores SIGTERM, SIGINT, SIGUSR1 (the dump signal) and SIGALRM is still located.
The watchdog's frames are untrusted (the job's code can write them): only well-formed,
bounded (file, line) pairs are kept."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxls.analysis_runs.outcome import failure_report
from fxls.analysis_runs.request import AnalysisRequest
from fxls.project.setting_groups import JobLimits
from fxls.project.settings import Settings
from fxls.worker.client import WorkerClient
from fxls.worker.where import innermost_lines, read_where
from tests.worker import where_jobs

JOBS = "tests.worker.where_jobs"
JOBS_FILE = str(Path(where_jobs.__file__).resolve())


def _line_of(function: object, text: str) -> int:
    lines, first = inspect.getsourcelines(function)  # type: ignore[arg-type]
    (offset,) = [n for n, line in enumerate(lines) if text in line]
    return first + offset


@pytest.fixture
async def client() -> AsyncIterator[WorkerClient]:
    worker = WorkerClient(sys.executable)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.close()


@pytest.mark.parametrize("job", ["deaf_sleep", "deaf_sleep_after_forgeries"])
async def test_a_job_deaf_to_signals_is_located_by_its_watchdog(
        client: WorkerClient, job: str) -> None:
    result = await client.run(f"{JOBS}:{job}", {}, timeout=1.5)
    assert result.status == "timeout", result
    assert "most recent call first" not in result.output  # the dump signal was ignored
    sleeping = _line_of(getattr(where_jobs, job), "the line the job is running")
    assert result.where is not None and [JOBS_FILE, sleeping] in result.where, result.where
    assert all(isinstance(f, str) and type(n) is int and n > 0 for f, n in result.where)
    forged = {"x.py", "huge.py", *(f"f{n}.py" for n in range(100))}
    assert not forged & {f for f, _ in result.where}, result.where


async def test_a_job_that_ends_on_its_own_has_no_where(client: WorkerClient) -> None:
    result = await client.run("tests.worker.jobs:nap", {"seconds": 0.5}, timeout=10)
    assert result.status == "ok" and result.where is None, result


def _body(value: object) -> bytes:
    return json.dumps({"status": "where", "value": value}).encode()


def test_only_bounded_file_line_pairs_are_read() -> None:
    assert read_where(_body([["a.py", 3], ["b.py", 7]])) == [("a.py", 3), ("b.py", 7)]
    for bad in ([["a.py", True]], [["a.py", 0]], [["a.py", 1.0]], [["a.py", 10**12]],
                [["a" * 5000, 1]], [[1, 1]], [["a.py", 1, 2]], {"a.py": 1}, "a.py:1",
                [[f"{n}.py", 1] for n in range(65)]):
        assert read_where(_body(bad)) is None, bad
    assert read_where(b"not json") is None
    assert read_where(b'{"status":"where","value":' + b"[" * 100_000 + b"]" * 100_000
                      + b"}") is None  # over the size limit: never decoded


def test_the_innermost_line_of_each_file() -> None:
    def inner() -> list[list[object]]:
        return innermost_lines(sys._getframe())  # innermost

    found = inner()
    here = str(Path(__file__))
    assert found[0] == [here, _line_of(inner, "# innermost")]
    assert [name for name, _ in found].count(here) == 1


def test_the_report_takes_the_dump_then_the_watchdog_and_only_lines_of_the_file(
        tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    source = "import time\n\n\ntime.sleep(1000)\n"
    path.write_text(source)
    request = AnalysisRequest(str(path), source, Settings(limits=JobLimits(timeout=2)))

    def line(output: str = "", where: object = None) -> int:
        report = failure_report(request, "timeout", "", output, where)
        return report.diagnostics[0].span.line

    resolved = str(path.resolve())
    assert line(where=[[resolved, 4]]) == 4
    assert line(where=[["other.py", 4], [resolved, 4]]) == 4  # the file's own line
    assert line(where=[["other.py", 3]]) == 1
    assert line(where=[[resolved, 99]]) == 1  # not a line of the file
    assert line(where="m.py:4") == 1
    dump = f'Thread 0x1 (most recent call first):\n  File "{resolved}", line 2 in <module>\n'
    assert line(output=dump, where=[[resolved, 4]]) == 2  # the dump, taken at the kill
