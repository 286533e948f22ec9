"""The worker's shape: idle job processes ready for two jobs, frames forwarded as bytes,
cheap forks, one job API, tracing's diagnostics sent once."""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fxls.project.source_text import source_text
from fxls.report import Diagnostic, FileReport, RelatedInfo, Span, check_report
from fxls.worker.client import WorkerClient
from fxls.worker.pool import IDLE_CHILDREN
from fxls.worker.protocol import (
    HEADER,
    FrameBuffer,
    Oversized,
    attach,
    decode,
    encode,
    encode_status,
    peek_status,
)
from tests import probes
from tests.worker.test_worker import JOBS, children_of

REPO = Path(__file__).resolve().parents[2]


def test_a_job_frame_is_forwarded_undecoded_after_the_workers_envelope() -> None:
    body = encode_status("ok", value={"status": "nested", "id": 99})[8:]
    assert peek_status(body) == "ok"
    data = attach({"op": "result", "id": 7}, body)
    (envelope,) = FrameBuffer().feed(data[: HEADER.size + HEADER.unpack_from(data)[0]])
    # the job's bytes cannot change the worker's members: they are not part of the envelope
    assert envelope == {"op": "result", "id": 7, "body": len(body)}
    assert data.endswith(body) and decode(body)["value"] == {"status": "nested", "id": 99}


def test_a_frame_over_the_limit_is_skipped_as_it_arrives_never_buffered() -> None:
    frames = FrameBuffer(limit=1000)
    announced = HEADER.pack(1 << 40)
    assert frames.bodies(announced + b"x" * 500) == [Oversized(1 << 40)]
    for _ in range(100):  # fed 100 MB: nothing is kept
        assert frames.bodies(b"x" * (1 << 20)) == []
        assert len(frames._data) == 0
    small = FrameBuffer(limit=1000)
    (oversized, after) = small.bodies(HEADER.pack(2000) + b"y" * 2000 + encode({"op": "ping"}))
    assert oversized == Oversized(2000) and decode(after) == {"op": "ping"}  # in step again


@pytest.mark.parametrize("body", [b"", b"[1]", b'{"value":1,"status":"ok"}', b'{"status":1}',
                                  b"not json"])
def test_what_a_job_did_not_frame_has_no_status(body: bytes) -> None:
    assert peek_status(body) is None


async def test_the_worker_keeps_two_job_processes_ready() -> None:
    worker = WorkerClient(sys.executable)
    await worker.start()
    try:
        assert worker.pid is not None
        ready = [pid for pid in children_of(worker.pid) if pid != worker.zygote_pid]
        assert len(ready) == IDLE_CHILDREN == 2
        first, second = await asyncio.gather(
            *(worker.run(f"{JOBS}:nap", {"seconds": 0.3}, timeout=10) for _ in range(2)))
        assert first.status == second.status == "ok" and first.value != second.value
        await asyncio.sleep(0.3)
        replaced = [pid for pid in children_of(worker.pid) if pid != worker.zygote_pid]
        assert len(replaced) == IDLE_CHILDREN and not set(replaced) & set(ready)
    finally:
        await worker.close()


def _started_at(pid: int) -> float:
    """When process ``pid`` started, on the monotonic clock (10 ms steps)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return since_boot - (time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic())


async def test_a_jobs_replacement_is_forked_once_the_job_sent_its_first_result() -> None:
    """A new idle process warms up by running an analysis: on two cores, forked with the
    job it would slow the job down until its first diagnostics."""
    worker = WorkerClient(sys.executable)
    await worker.start()
    try:
        assert worker.pid is not None
        ready = set(children_of(worker.pid)) - {worker.zygote_pid}
        result = await worker.run(f"{JOBS}:partial_after_a_nap", {"seconds": 0.4}, timeout=10)
        assert result.status == "ok", result
        sent = result.value
        for _ in range(100):  # until the job's process is gone: the idle ones are left
            idle = set(children_of(worker.pid)) - {worker.zygote_pid}
            if len(idle) == IDLE_CHILDREN:
                break
            await asyncio.sleep(0.05)
        (replacement,) = idle - ready
        assert _started_at(replacement) >= sent - 0.02  # not at the job's start, 0.4 s before
    finally:
        await worker.close()


async def test_with_a_warm_up_a_jobs_replacement_is_forked_once_the_job_ended() -> None:
    """Its warm-up would take a core from what the job does after its first result (the
    export and compile tiers take seconds)."""
    worker = WorkerClient(sys.executable, warm_up=f"{JOBS}:warm_up")
    await worker.start()
    try:
        assert worker.pid is not None
        ready = set(children_of(worker.pid)) - {worker.zygote_pid}
        result = await worker.run(f"{JOBS}:partial_then_a_nap", {"seconds": 0.4}, timeout=10)
        assert result.status == "ok", result
        ended = result.value
        for _ in range(100):
            idle = set(children_of(worker.pid)) - {worker.zygote_pid}
            if len(idle) == IDLE_CHILDREN and idle - ready:
                break
            await asyncio.sleep(0.05)
        (replacement,) = idle - ready
        assert _started_at(replacement) >= ended - 0.02  # not at the partial, 0.4 s before
    finally:
        await worker.close()


async def test_the_worker_primes_itself_once_and_its_forks_inherit_it() -> None:
    worker = WorkerClient(sys.executable, prime=f"{JOBS}:warm_up")
    await worker.start()
    try:
        result = await worker.run(f"{JOBS}:warm_state", {}, timeout=10)
        assert result.status == "ok", result
        assert result.value["warmed"] is False  # set in the worker, not in this process
        assert result.value["path"] is False  # sys.path put back
        assert "WARM-UP OUTPUT" not in result.output
        primed = await worker.run(f"{JOBS}:primed_by", {}, timeout=10)
        assert primed.value == worker.pid
    finally:
        await worker.close()


def test_huge_pages_make_forks_of_a_big_heap_cheaper() -> None:
    """A heap of 256 MB of small objects: forking it copies far fewer page-table entries once
    it is in huge pages (skipped where the kernel offers none)."""
    enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not enabled.exists() or "[never]" in enabled.read_text():
        pytest.skip("no transparent huge pages here")
    script = textwrap.dedent("""
        import os, time
        from fxls.worker.hugepages import collapse_anonymous_memory

        heap = [bytes(200) for _ in range(1_000_000)]

        def fork_ms():
            times = []
            for _ in range(7):
                start = time.perf_counter()
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                times.append(time.perf_counter() - start)
                os.waitpid(pid, 0)
            return min(times) * 1000  # the least disturbed by other load

        before = fork_ms()
        collapsed = collapse_anonymous_memory()
        print(before, fork_ms(), collapsed)
    """)
    if probes.KERNEL < (6, 1):
        pytest.skip("MADV_COLLAPSE needs Linux 6.1")
    measured = []
    for _ in range(3):  # another process's load can slow one set of forks: three tries
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env={"PYTHONPATH": str(REPO)}, timeout=120, check=True)
        before, after, collapsed = (float(x) for x in done.stdout.split())
        assert collapsed >= 128 << 20
        measured.append((before, after))
        if after < before / 2:
            return
    raise AssertionError(f"forks (before, after) in ms: {measured}")


def test_the_worker_imports_nothing_of_torch_or_the_analysis() -> None:
    generic = ["api.py", "child.py", "client.py", "hugepages.py", "protocol.py", "worker_loop.py",
               "messages.py", "request_reader.py", "running_job.py", "job_results.py",
               "job_table.py", "worker_process.py"]
    for name in generic:
        tree = ast.parse((REPO / "fxls" / "worker" / name).read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert not {m for m in imported if m.startswith(("torch", "fxls.analysis", "fxcore"))}
        if name != "client.py":  # whose docstring gives ``learn_imports=("torch",)``
            assert "torch" not in (REPO / "fxls" / "worker" / name).read_text(encoding="utf-8")
    job = (REPO / "fxls" / "analysis" / "job.py").read_text(encoding="utf-8")
    assert "fxls.worker.child" not in job and "from fxls.worker.api import" in job


def test_the_analysis_warm_up_leaves_torch_and_the_modules_as_they_were() -> None:
    import torch

    from fxls.analysis.job import warm_up

    modules = set(sys.modules)
    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    warm_up()
    assert torch.equal(torch.rand(4), expected)
    assert not {m for m in set(sys.modules) - modules if m.startswith("_fxls_warm_up")}


def _diagnostic(code: str, line: int, message: str = "m") -> Diagnostic:
    return Diagnostic(code, "error", message, Span("/p/m.py", line, line, 0, 4), "Net")


def test_the_final_report_sends_only_what_the_partial_one_lacked() -> None:
    unchanged, gains_related = _diagnostic("FX001", 3), _diagnostic("FX002", 5)
    partial = FileReport("m.py", diagnostics=[unchanged, gains_related])
    sent = partial.to_dict()
    gains_related.related.append(RelatedInfo(Span("/p/m.py", 9, 9, 0, 1), "also reached"))
    final = FileReport("m.py", diagnostics=[_diagnostic("FX014", 1), unchanged, gains_related,
                                            _diagnostic("FX020", 7)])
    data = final.to_dict(partial=sent)
    assert [d["code"] for d in data["diagnostics"]] == ["FX014", "FX002", "FX020"]
    assert data["from_partial"] == [[1, 0]]

    text = source_text("code\n" * 9)  # the analysed file the spans point into
    received_partial = check_report(decode(encode_status("partial", value=sent)[8:])["value"],
                                    path="/p/m.py", text=text)
    merged = check_report(data, path="/p/m.py", text=text,
                          partial=received_partial.sent_ahead).report
    assert [d.code for d in merged.diagnostics] == ["FX014", "FX001", "FX002", "FX020"]
    assert [len(d.related) for d in merged.diagnostics] == [0, 0, 1, 0]
    with pytest.raises(ValueError, match="partial report that is missing"):
        check_report(data, path="/p/m.py", text=text)
