"""Warmth: a job's ``api.send_warmth`` value reaches the idle job process next in line, which
runs ``warm_from`` on it before its job; the worker keeps one value per key and the newest
few; a waiting process takes warmth frames apart from its job's frames."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from fxls.worker import api
from fxls.worker.client import WorkerClient
from fxls.worker.job_inbox import JobInbox
from fxls.worker.protocol import WARMTH, FrameBuffer, decode, encode, encode_status, frame
from fxls.worker.warmth_relay import KEPT, WarmthRelay
from tests.worker.test_worker import JOBS

GIVE_UP_S = 60.0


def _warmth_body(key: str, n: int) -> bytes:
    return encode_status(WARMTH, value={"key": key, "n": n})[8:]


def _sent(relay: WarmthRelay, sent: set[int]) -> list[object]:
    read, write = os.pipe()
    try:
        relay.send_to(write, sent)
        os.close(write)
        data = b""
        while chunk := os.read(read, 1 << 16):
            data += chunk
    finally:
        os.close(read)
    values = []
    for body in FrameBuffer().bodies(data):
        assert isinstance(body, bytes)
        message = decode(body)
        assert isinstance(message, dict)
        values.append(message["value"])
    return values


def test_the_relay_keeps_one_value_per_key_newest_first_and_sends_each_once() -> None:
    relay = WarmthRelay()
    relay.remember(_warmth_body("a.py", 1))
    relay.remember(_warmth_body("b.py", 1))
    relay.remember(_warmth_body("a.py", 2))  # a newer save of a.py replaces its value
    sent: set[int] = set()
    assert _sent(relay, sent) == [{"key": "a.py", "n": 2}, {"key": "b.py", "n": 1}]
    assert _sent(relay, sent) == []  # the same process is not sent them again
    for n in range(KEPT + 2):
        relay.remember(_warmth_body(f"c{n}.py", n))
    assert [value["key"] for value in _sent(relay, set())] == [  # type: ignore[index]
        f"c{n}.py" for n in reversed(range(2, KEPT + 2))]


def test_the_relay_ignores_a_body_without_a_key() -> None:
    relay = WarmthRelay()
    for body in (b"not json", encode_status(WARMTH, value=[1])[8:],
                 encode_status(WARMTH, value={"key": 3})[8:]):
        relay.remember(body)
    assert _sent(relay, set()) == []


def test_a_waiting_process_takes_warmth_apart_from_its_job() -> None:
    read, write = os.pipe()
    job = encode({"op": "run", "id": "1"}) + frame(b'{"params":true}')
    os.write(write, frame(_warmth_body("a.py", 1)) + job)
    try:
        inbox = JobInbox(read)
        assert inbox.next_warmth(wait_s=5.0) == {"key": "a.py", "n": 1}
        os.close(write)
        assert inbox.job_bytes() == job
        assert api.job_waiting()
        assert inbox.next_warmth() is None  # the job is here: warming up is over
    finally:
        api._job_arrived.clear()  # this process is no job process


async def test_a_job_warmth_reaches_the_next_job_process_before_its_job(tmp_path: Path) -> None:
    worker = WorkerClient(sys.executable, warm_up=f"{JOBS}:warm_up",
                          warm_from=f"{JOBS}:warm_from_value")
    await worker.start()
    try:
        value = {"key": "a.py", "n": 1, "mark": str(tmp_path / "given")}
        sent = await worker.run(f"{JOBS}:send_warmth", {"value": value})
        assert sent.status == "ok" and sent.value is True, sent
        # the process next in line warms up, then is given the value (it marks the file);
        # a job sent sooner would take it first and end its warming up
        deadline = asyncio.get_running_loop().time() + GIVE_UP_S
        while not (tmp_path / "given").exists():
            assert asyncio.get_running_loop().time() < deadline, "no process was given it"
            await asyncio.sleep(0.1)
        given = await worker.run(f"{JOBS}:warmth_given", {})
        assert given.status == "ok" and given.value == [value], given
    finally:
        await worker.close()


async def test_without_warm_from_no_process_is_given_warmth() -> None:
    worker = WorkerClient(sys.executable, warm_up=f"{JOBS}:warm_up")
    await worker.start()
    try:
        await worker.run(f"{JOBS}:send_warmth", {"value": {"key": "a.py", "n": 1}})
        for _ in range(3):
            await asyncio.sleep(0.5)
            given = await worker.run(f"{JOBS}:warmth_given", {})
            assert given.status == "ok" and given.value == [], given
    finally:
        await worker.close()
