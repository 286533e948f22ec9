"""A worker that stops answering (a job sent it SIGSTOP) is noticed and replaced."""

from __future__ import annotations

import sys
import time

from fxls.worker.client import WorkerClient
from fxls.worker.heartbeat import Heartbeat
from tests.worker.test_worker import JOBS, assert_still_works, wait_gone


async def test_a_stopped_worker_is_replaced() -> None:
    worker = WorkerClient(sys.executable, unresponsive_after_s=2.0)
    await worker.start()
    try:
        stopped_pid = worker.pid
        assert stopped_pid is not None
        started = time.monotonic()
        result = await worker.run(f"{JOBS}:stop_worker", {}, timeout=60)
        waited = time.monotonic() - started
        assert result.status == "crashed", result
        assert result.error is not None and "was stopped (SIGSTOP" in result.error
        assert waited < 10, waited  # noticed after ~2 s of silence, not at the job's timeout
        assert wait_gone(stopped_pid)  # killed, not left stopped
        await assert_still_works(worker)
        assert worker.pid not in (None, stopped_pid)
    finally:
        await worker.close()


async def test_a_busy_but_answering_worker_is_kept() -> None:
    worker = WorkerClient(sys.executable, unresponsive_after_s=1.0)
    await worker.start()
    try:
        pid = worker.pid
        result = await worker.run(f"{JOBS}:nap", {"seconds": 3}, timeout=20)
        assert result.status == "ok", result
        assert worker.pid == pid
    finally:
        await worker.close()


def test_a_worker_that_said_it_is_busy_gets_longer() -> None:
    beat = Heartbeat(silent_limit_s=0.0, busy_limit_s=60.0)
    beat.heard("busy")
    time.sleep(0.01)
    assert not beat.overdue()
    beat.heard("pong")
    time.sleep(0.01)
    assert beat.overdue()
