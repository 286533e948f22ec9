"""The zygote: a copy of the warm worker that forks the job processes, so that the worker
itself never forks for a job (its pages stay its own, the zygote's stay in huge pages).

Job processes are the worker's children all the same: it reaps them and reads their exit
status. The worker goes on without a zygote when there is none (``FXLS_WORKER_ZYGOTE=0``)
or when it dies."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from fxls.worker.client import WorkerClient
from fxls.worker.policy import JobPolicy
from fxls.worker.pool import IDLE_CHILDREN
from tests import probes
from tests.worker.test_worker import JOBS, children_of, wait_gone

MODES = ["sandbox", "plain"]


def minor_faults(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[7])


async def start(sandbox: bool, env: dict[str, str] | None = None) -> WorkerClient:
    worker = WorkerClient(sys.executable, sandbox=sandbox,
                          env=None if env is None else {**os.environ, **env})
    await worker.start()
    return worker


@pytest.mark.parametrize("mode", MODES)
async def test_the_zygote_forks_job_processes_that_are_the_workers_children(mode: str) -> None:
    worker = await start(sandbox=mode == "sandbox")
    try:
        assert worker.pid is not None and worker.zygote_pid is not None
        assert worker.zygote_pid in children_of(worker.pid)
        assert children_of(worker.zygote_pid) == []  # it never keeps a child of its own
        for _ in range(3):
            results = await asyncio.gather(
                *(worker.run(f"{JOBS}:echo", {"n": n}, timeout=30) for n in range(2)))
            assert [r.status for r in results] == ["ok", "ok"]
        await asyncio.sleep(0.2)
        assert children_of(worker.zygote_pid) == []
        idle = [pid for pid in children_of(worker.pid) if pid != worker.zygote_pid]
        assert len(idle) == IDLE_CHILDREN
    finally:
        await worker.close()
    assert wait_gone(worker.zygote_pid)


@pytest.mark.parametrize("network", [False, True])
async def test_the_worker_no_longer_copies_its_pages_for_every_job(network: bool) -> None:
    """With the worker forking, each job cost it ~500 copy-on-write faults (the pages its
    loop writes, shared again with every new child); with a zygote, a handful. Jobs allowed
    the network get a zygote of their own (the first one's network namespace has none)."""
    worker = await start(sandbox=True)
    policy = JobPolicy(network=network)
    try:
        assert worker.pid is not None
        for _ in range(3):  # the loop's own first touches
            await worker.run(f"{JOBS}:echo", {}, timeout=30, policy=policy)
        before = minor_faults(worker.pid)
        for _ in range(20):
            result = await worker.run(f"{JOBS}:echo", {}, timeout=30, policy=policy)
            assert result.status == "ok"
        assert (minor_faults(worker.pid) - before) / 20 < 100
    finally:
        await worker.close()


async def test_without_a_zygote_the_worker_forks_its_job_processes() -> None:
    worker = await start(sandbox=True, env={"FXLS_WORKER_ZYGOTE": "0"})
    try:
        assert worker.pid is not None and worker.zygote_pid is None
        assert len(children_of(worker.pid)) == IDLE_CHILDREN
        result = await worker.run(f"{JOBS}:echo", {"x": 1}, timeout=30)
        assert result.status == "ok" and result.value["params"] == {"x": 1}
    finally:
        await worker.close()


async def test_a_worker_whose_zygote_died_forks_the_job_processes_itself() -> None:
    worker = await start(sandbox=True)
    try:
        assert worker.pid is not None and worker.zygote_pid is not None
        os.kill(worker.zygote_pid, signal.SIGKILL)
        assert wait_gone(worker.zygote_pid)
        for n in range(4):  # the idle ones first, then forks of the worker's own
            result = await worker.run(f"{JOBS}:echo", {"n": n}, timeout=30)
            assert result.status == "ok" and result.value["params"] == {"n": n}
        await asyncio.sleep(0.2)
        assert len(children_of(worker.pid)) == IDLE_CHILDREN
    finally:
        await worker.close()


async def test_job_processes_asked_for_before_a_change_of_network_policy_are_not_used() -> None:
    """Children are made for the last job's network setting; a job with the other setting
    never runs in one of them (it would have, or lack, a network namespace it should not)."""
    worker = await start(sandbox=True)
    try:
        own = os.readlink("/proc/self/ns/net")
        for network in (True, False, True, True, False):
            result = await worker.run(f"{JOBS}:network_namespace", {}, timeout=30,
                                      policy=JobPolicy(network=network))
            assert result.status == "ok" and (result.value == own) is network
    finally:
        await worker.close()


@pytest.mark.skipif(not probes.NAMESPACES or probes.LANDLOCK_ABI < 6,
                    reason="shared only where Landlock scopes abstract sockets (ABI 6)")
async def test_job_processes_without_network_share_the_zygotes_empty_network_namespace() -> None:
    """One network namespace for all of them (made once, not per job), not the worker's."""
    worker = await start(sandbox=True)
    try:
        assert worker.zygote_pid is not None
        seen = {(await worker.run(f"{JOBS}:network_namespace", {}, timeout=30)).value
                for _ in range(3)}
        assert len(seen) == 1 and seen != {os.readlink("/proc/self/ns/net")}
        assert seen == {os.readlink(f"/proc/{worker.zygote_pid}/ns/net")}
    finally:
        await worker.close()


def test_a_fork_the_zygote_could_not_make_is_not_taken_for_a_job_process() -> None:
    """The announcement of a failed clone (pid -1, no pipes) raises ForkFailed: the worker
    stops that zygote and forks the job processes itself, with its own fallbacks."""
    import socket

    from fxls.worker.zygote import _ANNOUNCEMENT, ForkFailed, Zygote

    worker_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote = Zygote(os.getpid(), worker_end, generation=1)
    try:
        assert zygote.request(network=False) and zygote.pending == 1
        assert zygote_end.recv(1) == b"n"
        assert zygote.receive() is None  # nothing announced yet
        zygote_end.send(_ANNOUNCEMENT.pack(-1, 1, False))
        with pytest.raises(ForkFailed):
            zygote.receive(wait=True)
        assert zygote.pending == 0
    finally:
        worker_end.close()
        zygote_end.close()
