"""The client's runs in flight: which worker process each was sent to, which were superseded
by a newer run of the same job id, and which never reached a worker and may be sent again.

Each run is one key (the ``id`` of its ``run`` request); its future resolves to its
``JobResult`` once, whatever ends it first: its result, a refusal, its worker's death, a
newer run of its job id, or the client closing.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from fxls.worker.job_results import JobResult
from fxls.worker.protocol import JobStatus, JsonValue
from fxls.worker.worker_process import WorkerProcess


def superseded() -> JobResult:
    return JobResult(JobStatus.CANCELLED, error="superseded by a newer job with the same job_id")


@dataclass(slots=True)
class PendingRun:
    future: asyncio.Future[JobResult]
    #: the worker process it was sent to
    worker: WorkerProcess
    on_partial: Callable[[JsonValue], None] | None = None
    #: the worker acknowledged it (a job process is running it)
    started: bool = False
    #: it ended because its worker died before acknowledging it: it never ran, and may be
    #: sent again
    undelivered: bool = False
    #: partial results received
    partials: int = 0
    #: the newest coalesced partial result, undecoded
    held: bytes | None = None

    def resolve(self, result: JobResult) -> None:
        if not self.future.done():
            self.future.set_result(result)


class JobTable:
    """The runs in flight, by key, and the job ids they hold."""

    def __init__(self) -> None:
        self._runs: dict[int, PendingRun] = {}
        #: the run holding each job id
        self._job_ids: dict[str, int] = {}
        #: runs superseded before they were sent: they are never sent
        self._superseded: set[int] = set()
        self._keys = itertools.count(1)

    def new_key(self, job_id: str | None) -> tuple[int, int | None]:
        """A key for a new run holding ``job_id``, and the key of the run it supersedes
        (resolved now as cancelled: the caller tells the worker), if any."""
        key = next(self._keys)
        if job_id is None:
            return key, None
        old = self._job_ids.pop(job_id, None)
        self._job_ids[job_id] = key
        if old is None:
            return key, None
        self._superseded.add(old)
        run = self._runs.pop(old, None)
        if run is not None:
            run.resolve(superseded())
        return key, old

    def is_superseded(self, key: int) -> bool:
        return key in self._superseded

    def release(self, key: int, job_id: str | None) -> None:
        """The run of ``key`` has returned: forget it."""
        self._superseded.discard(key)
        if job_id is not None and self._job_ids.get(job_id) == key:
            del self._job_ids[job_id]

    def add(self, key: int, worker: WorkerProcess,
            on_partial: Callable[[JsonValue], None] | None) -> PendingRun:
        run = PendingRun(asyncio.get_running_loop().create_future(), worker, on_partial)
        self._runs[key] = run
        return run

    def sent_to(self, key: int | None, worker: WorkerProcess) -> PendingRun | None:
        """The run of ``key``, if it was sent to ``worker`` (a message of another worker
        process about it is stale)."""
        run = self._runs.get(key) if key is not None else None
        return run if run is not None and run.worker is worker else None

    def pop(self, key: int) -> PendingRun | None:
        return self._runs.pop(key, None)

    def fail(self, result: JobResult, worker: WorkerProcess | None = None) -> None:
        """End the runs sent to ``worker`` (all runs when None) with ``result``; those the
        worker crashed before acknowledging are marked for sending again."""
        for key, run in list(self._runs.items()):
            if worker is not None and run.worker is not worker:
                continue
            del self._runs[key]
            run.undelivered = result.status == JobStatus.CRASHED and not run.started
            run.resolve(result)
