"""The typed worker protocol (issue 20): operations with one dispatch table each side, a
version checked at start, a job's frames bounded while read and checked as untrusted input,
partial floods coalesced, learned imports decided by the worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fxls.analysis_runs.request import LEARN_IMPORTS, WARM_IMPORTS, AnalysisRequest
from fxls.analysis_runs.runs import run_analysis
from fxls.project.setting_groups import JobLimits, ProjectLayout
from fxls.project.settings import Settings
from fxls.worker import client as client_module
from fxls.worker.client import JobResult, WorkerClient, WorkerError
from fxls.worker.protocol import (
    FORWARDED_PARTIALS,
    HEADER,
    JOB_FRAME_LIMIT,
    PROTOCOL_VERSION,
    ProtocolError,
    encode,
)
from fxls.worker.worker_imports import ROUND_LIMIT, import_plan, learnable
from fxls.worker.worker_process import check_ready, worker_command
from tests.security import hostile_reports as hostile

HOSTILE = "tests.security.hostile_reports"
REPO = Path(__file__).resolve().parents[2]


def _read_message(stream) -> dict:  # type: ignore[no-untyped-def]
    (size,) = HEADER.unpack(stream.read(HEADER.size))
    return json.loads(stream.read(size))


def test_an_unknown_operation_is_answered_with_an_error_at_once() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    config = json.dumps({"protocol": PROTOCOL_VERSION})
    worker = subprocess.Popen([*worker_command(sys.executable), config], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert worker.stdin is not None and worker.stdout is not None
    try:
        ready = _read_message(worker.stdout)
        assert ready["op"] == "ready" and ready["protocol"] == PROTOCOL_VERSION
        for request in ({"op": "frobnicate", "id": 5}, {"op": "run", "id": 6},
                        {"op": "cancel", "id": "7"}, [1, 2], {"op": "ping"}):
            worker.stdin.write(encode(request))
        worker.stdin.write(HEADER.pack(10) + b"not json!!")
        worker.stdin.write(encode({"op": "ping"}))
        worker.stdin.flush()
        answers = [_read_message(worker.stdout) for _ in range(6)]
        assert answers[0] == {"op": "error", "id": 5, "error": "unknown operation 'frobnicate'"}
        assert answers[1] == {"op": "error", "id": 6,
                              "error": "run: 'target' is None, expected str"}
        assert answers[2]["id"] is None and "'id' is '7', expected int" in answers[2]["error"]
        assert answers[3] == {"op": "error", "id": None, "error": "not an object: [1, 2]"}
        assert answers[4] == answers[5] == {"op": "pong"}  # the bad frame in between: skipped
        worker.stdin.write(encode({"op": "shutdown"}))
        worker.stdin.flush()
        assert worker.wait(30) == 0
    finally:
        worker.kill()
        worker.wait()


async def test_a_worker_of_another_protocol_version_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "PROTOCOL_VERSION", PROTOCOL_VERSION + 1)
    worker = WorkerClient(sys.executable)
    with pytest.raises(WorkerError) as caught:
        await worker.start()
    assert str(caught.value) == (
        f"the worker ({sys.executable} -m fxls.worker) refused to work with this fxls: the "
        f"client speaks fxls worker protocol {PROTOCOL_VERSION + 1}, this fxls speaks "
        f"{PROTOCOL_VERSION}: the worker's interpreter runs another fxls than the caller "
        f"(check `fxls.python` and its PYTHONPATH)")
    await worker.close()
    with pytest.raises(ProtocolError, match="the worker speaks fxls worker protocol 1,"):
        check_ready({"op": "ready", "pid": 1, "protocol": 1})


async def test_a_jobs_bad_frames_are_its_invalid_result_and_the_worker_goes_on() -> None:
    worker = WorkerClient(sys.executable)
    try:
        cases = {
            '{"status":"ok",nonsense': "the job's result is invalid: not JSON",
            '{"status":"cancelled"}': "it says its status is 'cancelled'",
            '{"status":"ok","value":1,"error":[1]}': "its 'error' is a list",
        }
        for body, words in cases.items():
            result = await worker.run(f"{HOSTILE}:raw_final", {"body": body}, timeout=30)
            assert result.status == "invalid" and words in (result.error or ""), result
        assert (await worker.run(f"{HOSTILE}:send_partials", {"count": 0})).value == "done"
    finally:
        await worker.close()


async def test_a_flood_of_partials_is_coalesced_and_a_few_all_go_through() -> None:
    worker = WorkerClient(sys.executable)
    try:
        for count in (3, 300):
            seen: list[int] = []
            note = seen.append
            result = await worker.run(f"{HOSTILE}:send_partials", {"count": count}, timeout=30,
                                      on_partial=lambda value, note=note: note(value["number"]))
            assert result.status == "ok" and result.value == "done"
            if count <= FORWARDED_PARTIALS:  # the analysis' own two or three: every one
                assert seen == list(range(count)) and result.last_partial is None
            else:  # the first ones, then only the newest, with the result, unpublished
                assert seen == list(range(FORWARDED_PARTIALS))
                assert result.last_partial == {"number": count - 1}
    finally:
        await worker.close()


def _peak_rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM")


async def test_a_frame_announcing_a_terabyte_ends_the_job_and_the_worker_buffers_none_of_it(
    tmp_path: Path,
) -> None:
    worker = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, sandbox=True)
    await worker.start()
    try:
        assert worker.pid is not None
        before = _peak_rss_mb(worker.pid)
        path = tmp_path / "attack.py"
        request = AnalysisRequest(str(path), hostile.OVERSIZED_FRAME,
                                  Settings(project=ProjectLayout(root=str(tmp_path)),
                                           limits=JobLimits(timeout=60)))
        report = await run_analysis(worker, request)
        assert report is not None
        (fx102,) = [d for d in report.diagnostics if d.code == "FX102"]
        assert fx102.span.line == 5  # `from fxls.worker import api`
        assert fx102.message.startswith(
            "the analysis produced an invalid report (the job sent a result frame of "
            f"1,099,511,627,776 bytes; the limit is {JOB_FRAME_LIMIT:,} bytes); line 5 "
            "imports fxls")
        # fed 1 GB after the header: the worker kept none of it (it grew by 1 GB before)
        assert _peak_rss_mb(worker.pid) - before < 64
        good = AnalysisRequest(str(tmp_path / "good.py"), hostile.GOOD,
                               Settings(project=ProjectLayout(root=str(tmp_path))))
        after = await run_analysis(worker, good)
        assert after is not None and [(d.code, d.span.line) for d in after.diagnostics] == [
            ("FX001", 12)]
    finally:
        await worker.close()


def test_only_names_inside_the_learned_packages_that_are_their_files_are_learnable() -> None:
    import torch._dynamo  # noqa: F401  (a package file check needs torch imported)

    names = ["torch._dynamo.eval_frame", "torch._dynamo", "torch._dynamo.not_there",
             "torch.utils.model_dump", "torch._dynamo.__main__", "torch._dynamo.testing",
             "os", "torch._dynamo..x", "torch._dynamo/../x", 7, "x" * 500]
    assert learnable(names, LEARN_IMPORTS) == ["torch._dynamo.eval_frame", "torch._dynamo"]
    assert learnable("torch._dynamo", LEARN_IMPORTS) == []
    many = {f"torch._dynamo.variables.m{i}" for i in range(100)}
    assert len(import_plan(many, 1000)) == ROUND_LIMIT and import_plan(many, 3) == sorted(
        many)[:3]
    assert import_plan({"torch.a.b", "torch.a", "torch.a.b.c", "torch.z"}, 10) == [
        "torch.a", "torch.z"]


async def test_a_forged_imports_frame_makes_the_worker_import_nothing(tmp_path: Path) -> None:
    worker = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, learn_imports=LEARN_IMPORTS,
                          sandbox=True)
    await worker.start()
    try:
        before = await worker.run(f"{HOSTILE}:torch_modules", {}, timeout=60)
        request = AnalysisRequest(str(tmp_path / "attack.py"), hostile.FORGED_IMPORTS,
                                  Settings(project=ProjectLayout(root=str(tmp_path)),
                                           limits=JobLimits(timeout=60)))
        report = await run_analysis(worker, request)
        assert report is not None
        assert [(d.code, d.span.line) for d in report.diagnostics] == [("FX001", 30)]
        # the worker learns right after a job's result, before it reads the next request
        after = await worker.run(f"{HOSTILE}:torch_modules", {}, timeout=60)
        assert before.status == after.status == "ok"
        assert after.value == before.value  # 766 -> 2,158 before the fix
    finally:
        await worker.close()


async def test_the_client_ends_a_run_the_worker_refused_at_once_and_ignores_bad_messages(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = WorkerClient(sys.executable)
    proc: Any = object()  # the worker process the run was sent to
    run = worker.jobs.add(9, proc, None)
    future = run.future
    for bad in ({"op": "result", "id": 9}, {"op": "warp", "id": 9}, ["x"],
                {"op": "started", "id": "9"}):
        worker._on_message(bad, None, proc)
    assert not future.done() and not run.started
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "ignored a message from the worker"] * 4 and "Traceback" not in caplog.text
    worker._on_message({"op": "error", "id": 9, "error": "unknown operation 'run2'"}, None, proc)
    assert future.result() == JobResult("error", error="the worker refused the job: "
                                                       "unknown operation 'run2'")
    assert worker.jobs.sent_to(9, proc) is None
