"""A job's limits hold for all its processes together (memory, the number of processes, its
temporary folder), through the worker API, in each sandbox mode; a job over a limit is
ended with the setting named and its stack in the output (the caller reports that line).
The modes come from an independent probe of the kernel (``unshare``)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator

import pytest

from fxls.worker.client import WorkerClient
from fxls.worker.policy import JobPolicy
from tests.security.sandbox_modes import EACH_MODE, MODES

JOBS = "tests.security.limit_jobs"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


@pytest.fixture(scope="module", params=EACH_MODE)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(mode: str) -> AsyncIterator[WorkerClient]:
    worker = WorkerClient(sys.executable, sandbox=True, env={**os.environ, **MODES[mode]})
    await worker.start()
    try:
        yield worker
    finally:
        await worker.close()


def running_line(output: str, function: str) -> bool:
    """The job's stack, printed before it was ended, shows it inside ``function``."""
    return re.search(rf'File ".*limit_jobs\.py", line \d+ in {function}', output) is not None


async def test_memory_of_all_the_processes_together(client: WorkerClient) -> None:
    """Four forks of 350 MB, each under the per-process limit of 1024 MB, are 1.4 GB
    together: the job is ended while it waits for them."""
    result = await client.run(f"{JOBS}:forks_that_hold_memory", {"forks": 4, "mb": 350},
                              timeout=30, policy=JobPolicy(memory_mb=1024))
    assert result.status == "limit", result
    assert "`memory_limit_mb` = 1024" in (result.error or "")
    assert running_line(result.output, "forks_that_hold_memory"), result.output[-2000:]


async def test_the_number_of_processes(client: WorkerClient) -> None:
    within = await client.run(f"{JOBS}:start_processes", {"count": 3, "sleep": 0.3},
                              timeout=30, policy=JobPolicy(max_processes=8))
    assert within.status == "ok", within
    over = await client.run(f"{JOBS}:start_processes", {"count": 10}, timeout=30,
                            policy=JobPolicy(max_processes=8))
    assert over.status == "limit", over
    assert "more than 8 processes" in (over.error or "")
    assert "`max_processes` = 8" in (over.error or "")
    assert running_line(over.output, "start_processes"), over.output[-2000:]


async def test_the_temporary_folder(client: WorkerClient, mode: str) -> None:
    result = await client.run(f"{JOBS}:fill_temp_folder", {"mb": 40, "then_sleep": 5},
                              timeout=30, policy=JobPolicy(tmp_mb=16))
    if mode == "no-namespaces":  # no tmpfs of its own: the worker measures the folder
        assert result.status == "limit", result
        assert "`tmp_limit_mb` = 16" in (result.error or "")
        assert running_line(result.output, "fill_temp_folder"), result.output[-2000:]
    else:  # a tmpfs of 16 MB: the 17th MB does not fit
        assert result.status == "ok", result
        assert result.value == {"written_mb": 16, "error": "ENOSPC"}
