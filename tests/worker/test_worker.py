"""The worker: jobs run in warm forks, every fault becomes a status, the next job still works."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxls.worker.client import JobResult, WorkerClient

REPO = Path(__file__).resolve().parents[2]
JOBS = "tests.worker.jobs"


@pytest.fixture
async def client() -> AsyncIterator[WorkerClient]:
    worker = WorkerClient(sys.executable, memory_limit_mb=1024)
    await worker.start()
    try:
        yield worker
    finally:
        await worker.close()


async def run(
    worker: WorkerClient, name: str, timeout: float = 10.0, **params: object
) -> JobResult:
    return await worker.run(f"{JOBS}:{name}", dict(params), timeout=timeout)


async def assert_still_works(worker: WorkerClient) -> None:
    result = await run(worker, "echo", value=1)
    assert result.status == "ok", result
    assert result.value["params"] == {"value": 1}


def is_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.05)
    return is_gone(pid)


async def wait_for_pidfile(pidfile: Path) -> int:
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text():
            return int(pidfile.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError("the job never started")


def children_of(pid: int) -> list[int]:
    pids: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return pids


async def test_echo_round_trip(client: WorkerClient) -> None:
    result = await run(client, "echo", text="héllo", nested={"a": [1, 2.5, None]})
    assert result.status == "ok"
    assert result.value["params"] == {"text": "héllo", "nested": {"a": [1, 2.5, None]}}
    assert result.value["pid"] not in (os.getpid(), client.pid)
    assert result.error is None
    assert result.duration_ms > 0


async def test_large_params_and_result(client: WorkerClient) -> None:
    result = await run(client, "big", size=8 * 1024 * 1024, padding="p" * 3_000_000)
    assert result.status == "ok"
    assert len(result.value) == 8 * 1024 * 1024


@pytest.mark.parametrize(
    ("job", "params", "timeout", "status", "detail"),
    [
        ("fail", {"value": 3}, 10.0, "error", "ValueError: bad input 3"),
        ("segfault", {}, 10.0, "crashed", "killed by signal SIGSEGV"),
        ("os_exit", {"code": 3}, 10.0, "crashed", "exited with code 3"),
        ("sleep_forever", {}, 0.5, "timeout", "timed out after 0.5 s"),
        ("allocate", {"gb": 2}, 10.0, "memory", "MemoryError"),
        ("recurse", {}, 10.0, "error", "RecursionError"),
        ("not_json", {}, 10.0, "error", "not JSON-serialisable"),
        ("missing_function", {}, 10.0, "error", "AttributeError"),
    ],
)
async def test_fault_then_next_job_ok(
    client: WorkerClient, job: str, params: dict, timeout: float, status: str, detail: str
) -> None:
    result = await run(client, job, timeout=timeout, **params)
    assert result.status == status, result
    assert detail in (result.error or ""), result.error
    await assert_still_works(client)


async def test_cpu_limit() -> None:
    worker = WorkerClient(sys.executable, cpu_limit_s=1)
    await worker.start()
    try:
        result = await run(worker, "busy_loop", timeout=20.0)
        assert result.status == "timeout", result
        assert "CPU time limit" in (result.error or "")
        await assert_still_works(worker)
    finally:
        await worker.close()


async def test_timeout_is_wall_clock(client: WorkerClient) -> None:
    started = time.monotonic()
    result = await run(client, "sleep_forever", timeout=0.5)
    assert result.status == "timeout"
    assert time.monotonic() - started < 3.0
    assert "going to sleep" in result.output


async def test_output_is_captured(client: WorkerClient) -> None:
    result = await run(client, "talk")
    assert result.status == "ok"
    for marker in ("MARKER-print", "MARKER-stderr", "MARKER-fd1"):
        assert marker in result.output


async def test_output_flood_keeps_only_the_tail(client: WorkerClient) -> None:
    started = time.monotonic()
    result = await run(client, "flood", timeout=30.0, mb=50)
    assert result.status == "ok", result
    assert result.value == "done"
    assert result.output.endswith("the end\n")
    assert len(result.output) < 70 * 1024
    assert time.monotonic() - started < 15.0
    await assert_still_works(client)


async def test_jobs_are_isolated(client: WorkerClient) -> None:
    assert (await run(client, "set_global", value=42)).value == "set"
    result = await run(client, "read_global")
    assert result.value == {"state": {}, "injected": False}


async def test_concurrent_jobs_run_in_parallel(client: WorkerClient) -> None:
    """Each job stamps when it ran: all three were running at once (whatever the load of
    the machine), in three processes."""
    results = await asyncio.gather(*(run(client, "nap_stamped", seconds=0.6) for _ in range(3)))
    assert [r.status for r in results] == ["ok"] * 3
    assert len({r.value["pid"] for r in results}) == 3
    assert max(r.value["start"] for r in results) < min(r.value["end"] for r in results)


async def test_same_job_id_cancels_the_older_job(client: WorkerClient, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    older = asyncio.create_task(
        client.run(f"{JOBS}:sleep_forever", {"pidfile": str(pidfile)}, timeout=30, job_id="doc")
    )
    job_pid = await wait_for_pidfile(pidfile)
    newer = await client.run(f"{JOBS}:echo", {"n": 2}, timeout=10, job_id="doc")
    assert newer.status == "ok"
    result = await asyncio.wait_for(older, 5)
    assert result.status == "cancelled"
    assert wait_gone(job_pid)


async def test_other_job_ids_are_not_cancelled(client: WorkerClient) -> None:
    first = asyncio.create_task(client.run(f"{JOBS}:nap", {"seconds": 0.3}, timeout=10, job_id="a"))
    await asyncio.sleep(0.05)
    second = await client.run(f"{JOBS}:echo", {}, timeout=10, job_id="b")
    assert second.status == "ok"
    assert (await first).status == "ok"


async def test_worker_killed_externally(client: WorkerClient, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    in_flight = asyncio.create_task(run(client, "sleep_forever", timeout=30, pidfile=str(pidfile)))
    job_pid = await wait_for_pidfile(pidfile)
    old_pid = client.pid
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    result = await asyncio.wait_for(in_flight, 5)
    assert result.status == "crashed"
    assert "SIGKILL" in (result.error or "")
    assert wait_gone(job_pid)
    await assert_still_works(client)
    assert client.pid not in (None, old_pid)


async def test_worker_killed_right_before_run(client: WorkerClient) -> None:
    old_pid = client.pid
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    await assert_still_works(client)


async def test_cancelling_the_run_kills_the_job(client: WorkerClient, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(run(client, "sleep_forever", timeout=30, pidfile=str(pidfile)))
    job_pid = await wait_for_pidfile(pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_gone(job_pid)
    await assert_still_works(client)


async def test_unstartable_worker() -> None:
    worker = WorkerClient("/nonexistent/python")
    with pytest.raises(OSError):
        await worker.start()
    result = await worker.run(f"{JOBS}:echo", {}, timeout=5)
    assert result.status == "crashed"
    assert "could not start the worker" in (result.error or "")
    await worker.close()


async def test_close_cancels_running_jobs_and_kills_them(
    client: WorkerClient, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(run(client, "sleep_forever", timeout=30, pidfile=str(pidfile)))
    job_pid = await wait_for_pidfile(pidfile)
    worker_pid = client.pid
    await client.close()
    assert (await asyncio.wait_for(task, 5)).status == "cancelled"
    assert wait_gone(job_pid)
    assert worker_pid is not None and wait_gone(worker_pid)


async def test_warm_torch_matmul_does_not_hang() -> None:
    worker = WorkerClient(sys.executable, warm_imports=("torch",))
    await worker.start()
    try:
        loaded = await worker.run(f"{JOBS}:torch_loaded", {}, timeout=10)
        assert loaded.status == "ok" and loaded.value is True
        results = await asyncio.gather(
            *(worker.run(f"{JOBS}:matmul", {}, timeout=20) for _ in range(3))
        )
        assert [r.status for r in results] == ["ok"] * 3, results
        assert all(r.value == 2.0 for r in results)
        assert all(r.duration_ms < 5000 for r in results)
    finally:
        await worker.close()


async def test_partial_results_arrive_before_the_result(client: WorkerClient) -> None:
    seen: list[object] = []
    result = await client.run(f"{JOBS}:partials", {"count": 3}, on_partial=seen.append)
    assert result.status == "ok" and result.value == "final", result
    assert seen == [{"index": 0}, {"index": 1}, {"index": 2}]


async def test_partial_results_survive_a_crash_after_them(client: WorkerClient) -> None:
    seen: list[object] = []
    result = await client.run(
        f"{JOBS}:partials", {"count": 2, "then_exit": True}, on_partial=seen.append
    )
    assert result.status == "crashed" and "code 5" in (result.error or ""), result
    assert seen == [{"index": 0}, {"index": 1}]
    await assert_still_works(client)


async def _warm_state(warm_up: str | None) -> list[JobResult]:
    worker = WorkerClient(
        sys.executable, warm_imports=("torch", "tests.worker.seeded"), warm_up=warm_up
    )
    await worker.start()
    try:
        results = []
        for _ in range(2):
            await asyncio.sleep(1.0)  # the idle job process has warmed up by now
            results.append(await worker.run(f"{JOBS}:warm_state", {}, timeout=10))
        return results
    finally:
        await worker.close()


async def test_warm_up_runs_before_the_job_and_leaves_no_trace() -> None:
    # the two workers side by side: their waits for the idle job process (2 s each) overlap
    warmed, plain = await asyncio.gather(_warm_state(f"{JOBS}:warm_up"), _warm_state(None))
    for result in (*warmed, *plain):
        assert result.status == "ok", result
        assert "WARM-UP OUTPUT" not in result.output
    assert [r.value["warmed"] for r in warmed] == [True, True]
    assert [r.value["warmed"] for r in plain] == [False, False]
    for with_warm_up, without in zip(warmed, plain, strict=True):
        assert with_warm_up.value["path"] is False
        assert with_warm_up.value["torch"] == without.value["torch"]


async def test_a_warm_up_can_stop_when_the_job_arrives() -> None:
    worker = WorkerClient(sys.executable, warm_up=f"{JOBS}:endless_warm_up")
    await worker.start()
    try:
        await asyncio.sleep(0.3)
        result = await worker.run(f"{JOBS}:warm_up_stopped", {}, timeout=20)
        assert result.status == "ok" and result.value is True, result
    finally:
        await worker.close()


async def test_a_failing_warm_up_does_not_stop_jobs() -> None:
    worker = WorkerClient(sys.executable, warm_up=f"{JOBS}:failing_warm_up")
    await worker.start()
    try:
        await asyncio.sleep(0.5)
        await assert_still_works(worker)
        await assert_still_works(worker)
    finally:
        await worker.close()


def _run_script(body: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_user_output_never_reaches_callers_stdout() -> None:
    proc = _run_script(
        """
        import asyncio, sys
        from fxls.worker.client import WorkerClient

        async def main():
            client = WorkerClient(sys.executable)
            await client.start()
            result = await client.run("tests.worker.jobs:talk", {}, timeout=10)
            await client.close()
            print("STATUS", result.status, "MARKER-fd1" in result.output)

        asyncio.run(main())
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "MARKER" not in proc.stdout
    assert proc.stdout.strip() == "STATUS ok True"


def test_worker_exits_when_its_parent_is_killed() -> None:
    proc = _run_script(
        """
        import asyncio, os, signal, sys, time
        from fxls.worker.client import WorkerClient

        async def main():
            client = WorkerClient(sys.executable)
            await client.start()
            await asyncio.sleep(0.2)  # let the worker fork its idle child
            print(client.pid, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
        """
    )
    assert proc.returncode == -signal.SIGKILL
    worker_pid = int(proc.stdout.split()[0])
    children = children_of(worker_pid)
    assert wait_gone(worker_pid, 5.0)
    assert all(wait_gone(pid, 5.0) for pid in children)


async def test_the_worker_learns_library_modules_that_jobs_import() -> None:
    """A job imports torch.utils.benchmark (not loaded by `import torch`): the worker imports
    it after the job, so the next job starts with it loaded; other packages are not learned,
    and forked jobs still compute with several threads."""
    worker = WorkerClient(sys.executable, warm_imports=("torch",), learn_imports=("torch",))
    await worker.start()
    modules = ["torch.utils.benchmark", "tests.worker.seeded"]
    try:
        first = await worker.run(f"{JOBS}:import_and_report", {"modules": modules}, timeout=60)
        assert first.status == "ok", first
        assert first.value["loaded_at_start"] == {m: False for m in modules}
        second = await worker.run(f"{JOBS}:import_and_report", {"modules": modules}, timeout=60)
        assert second.status == "ok", second
        assert second.value["loaded_at_start"] == {
            "torch.utils.benchmark": True, "tests.worker.seeded": False}
        assert second.value["finite"] is True
    finally:
        await worker.close()
