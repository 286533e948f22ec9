"""The caller's side: start the warm worker, run jobs in it, survive its death.

The worker process itself (spawn, handshake, heartbeat, close) is a ``WorkerProcess``; the
runs in flight are the ``JobTable``'s. Every message from the worker is decoded once into its
record (``messages.decode_event``) and dispatched through one table
(``WorkerClient._handlers``); a job's own bytes (its partial and final results) are decoded
as untrusted input (``job_results``): one that is not JSON, or not an object, makes that
job's result ``invalid`` and nothing else. Partial results past ``FORWARDED_PARTIALS`` are
coalesced. A run's params are encoded once, here, and decoded once, by the job process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from fxls.worker.job_results import JobResult, finished, job_body
from fxls.worker.job_table import JobTable, superseded
from fxls.worker.messages import (
    CancelRequest,
    Event,
    Partial,
    Ready,
    Refused,
    Result,
    RunRequest,
    SandboxFacts,
    Started,
    WarmRequest,
    WorkerConfig,
    decode_event,
    message_of,
)
from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import (
    FORWARDED_PARTIALS,
    PROTOCOL_VERSION,
    JobStatus,
    JsonValue,
    Op,
    ProtocolError,
    dumps,
    with_body,
)
from fxls.worker.sandbox import new_jobs_dir
from fxls.worker.worker_process import WorkerError, WorkerProcess

log = logging.getLogger(__name__)

#: the directory holding ``fxls`` and ``fxcore``; put on the worker's PYTHONPATH
REPO_ROOT = str(Path(__file__).resolve().parents[2])
#: extra time the client waits beyond a job's timeout before giving up on the worker
TIMEOUT_GUARD_S = 10.0
#: attempts for a job the worker never started because it died first
_DELIVERY_ATTEMPTS = 3


class WorkerClient:
    """Runs ``module:function(params)`` jobs, each in a fresh fork of one warm worker."""

    def __init__(
        self,
        python: str,
        *,
        warm_imports: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        memory_limit_mb: int = 2048,
        cpu_limit_s: float | None = None,
        warm_up: str | None = None,
        warm_from: str | None = None,
        learn_imports: tuple[str, ...] = (),
        prime: str | None = None,
        sandbox: bool = False,
        unresponsive_after_s: float = 10.0,
        learn_libraries: bool = False,
        roots: tuple[str, ...] = (),
    ) -> None:
        """``warm_up`` (``module:function``, no arguments; see ``fxls.worker.api``) runs in
        each pre-forked job process before its job arrives, ``prime`` (the same kind of
        function) once in the worker before its first fork; neither may run user code.
        ``warm_from`` (``module:function`` of one JSON value) runs in the job process that
        will take the next job, after its warm-up, on each value recent jobs sent with
        ``api.send_warmth``: the job package's caches filled from data, never user code.
        Modules of the packages named in
        ``learn_imports`` (e.g. ``("torch._dynamo",)``; ``("torch",)`` for all of it) that a
        job imported are imported by the warm worker after that job, so later jobs find them
        loaded (``fxls.worker.worker_imports`` decides which). With ``learn_libraries``, the
        installed third-party libraries jobs import are imported by the zygote that forks
        the job processes, for later jobs (``fxls.worker.library_learner``; ``warm`` names
        some ahead of any job). With ``sandbox``, jobs run
        confined (``fxls.worker.sandbox``; ``run(policy=...)`` widens it per job). A worker
        that answers nothing for ``unresponsive_after_s`` is replaced (``heartbeat``).
        ``roots`` (workspace and project roots; the working directory is one) are where
        the worker never imports from outside a job, even with them on PYTHONPATH."""
        self.python = python
        self.env = env
        self.unresponsive_after_s = unresponsive_after_s
        #: what each new worker is started with (its sandbox folder and the user's
        #: PYTHONPATH are added at the start)
        self.config = WorkerConfig(
            warm_imports=tuple(warm_imports), memory_limit_mb=memory_limit_mb,
            cpu_limit_s=cpu_limit_s, warm_up=warm_up, warm_from=warm_from, prime=prime,
            learn_imports=tuple(learn_imports), learn_libraries=learn_libraries,
            roots=(os.getcwd(), *roots), sandbox=sandbox)
        self.jobs = JobTable()
        self._worker: WorkerProcess | None = None
        #: the last worker's ``ready`` (kept once it is gone)
        self._ready: Ready | None = None
        self._jobs_dirs: list[str] = []
        self._start_lock = asyncio.Lock()
        self._closed = False
        #: one handler per message of the worker's (``messages.Event``): its record, the
        #: job's bytes that follow it, the worker process it came from
        self._handlers: dict[Op, Callable[..., None]] = {
            Op.STARTED: self._on_started, Op.PARTIAL: self._on_partial,
            Op.RESULT: self._on_result, Op.ERROR: self._on_refused,
            Op.READY: _ignore, Op.PONG: _ignore, Op.BUSY: _ignore,
        }

    @property
    def pid(self) -> int | None:
        """The worker's pid while it runs."""
        return self._worker.pid if self._worker is not None and self._alive() else None

    @property
    def zygote_pid(self) -> int | None:
        """The worker's zygote, which forks the job processes (None: the worker forks them)."""
        return self._ready.zygote if self._ready is not None else None

    @property
    def import_errors(self) -> dict[str, str]:
        return dict(self._ready.import_errors) if self._ready is not None else {}

    @property
    def sandbox_support(self) -> SandboxFacts | None:
        """What the kernel enforces for this worker's jobs (None: sandbox off or not
        started)."""
        return self._ready.sandbox if self._ready is not None else None

    # ------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the worker (if it is not running) and wait until its warm imports are done."""
        async with self._start_lock:
            self._closed = False
            if not self._alive():
                await self._spawn()

    async def close(self) -> None:
        """Stop the worker; its running jobs are killed and their runs return "cancelled"."""
        self._closed = True
        closed = JobResult(JobStatus.CANCELLED, error="the worker was closed")
        self.jobs.fail(closed)
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()
        self.jobs.fail(closed)
        _remove_dirs(self._jobs_dirs)

    def _alive(self) -> bool:
        return self._worker is not None and self._worker.alive()

    async def _spawn(self) -> None:
        config = replace(self.config, protocol=PROTOCOL_VERSION,
                         python_path=_user_python_path(self.env), jobs_dir=self._jobs_dir())
        worker = await WorkerProcess.spawn(self.python, config, _spawn_environment(self.env),
                                           self._on_message, self._worker_ended,
                                           self.unresponsive_after_s)
        self._note_sandbox(worker.ready.sandbox)
        self._ready, self._worker = worker.ready, worker

    def _jobs_dir(self) -> str | None:
        """A fresh folder for the jobs' private folders (the last worker's is gone)."""
        if not self.config.sandbox:
            return None
        _remove_dirs(self._jobs_dirs)
        self._jobs_dirs.append(new_jobs_dir())
        return self._jobs_dirs[-1]

    def _note_sandbox(self, facts: SandboxFacts | None) -> None:
        """Say once in the log what the kernel does not enforce."""
        if facts and self.sandbox_support is None:
            summary = str(facts.get("summary", ""))
            (log.warning if "NOT enforced" in summary else log.info)("%s", summary)

    def _worker_ended(self, worker: WorkerProcess, detail: str) -> None:
        """``worker`` is gone: its runs end (those it never started are sent again), and the
        next job starts a new worker."""
        if self._worker is worker:
            self._worker = None
        if not self._closed:
            log.warning("%s; the next job starts a new worker", detail)
        self.jobs.fail(JobResult(JobStatus.CRASHED, error=detail), worker)

    # ------------------------------------------------------------- messages
    def _on_message(self, message: JsonValue, body: bytes | None,
                    worker: WorkerProcess) -> None:
        """Decode a message of the worker's and dispatch it; one that does not fit the
        protocol is one log line."""
        try:
            event = decode_event(message)
        except ProtocolError as error:
            log.warning("ignored a message from the worker: %s", error)
            return
        self._handlers[event.op](event, body, worker)

    def _on_started(self, event: Started, body: bytes | None, worker: WorkerProcess) -> None:
        run = self.jobs.sent_to(event.id, worker)
        if run is not None:
            run.started = True

    def _on_partial(self, event: Partial, body: bytes | None, worker: WorkerProcess) -> None:
        """The first ``FORWARDED_PARTIALS`` go to the caller; later ones are coalesced: the
        newest is kept, undecoded, and comes with the result."""
        run = self.jobs.sent_to(event.id, worker)
        if run is None or run.future.done() or body is None:
            return
        run.partials += 1
        if run.partials > FORWARDED_PARTIALS:
            run.held = body
            return
        try:
            value = job_body(body).get("value")
        except ProtocolError as error:
            log.warning("ignored a partial result of job %s: %s", event.id, error)
            return
        if run.on_partial is not None:
            try:
                run.on_partial(value)
            except Exception as error:  # the caller's callback must not stop the reader
                log.warning("a partial-result callback failed: %s: %s",
                            type(error).__name__, error)

    def _on_result(self, event: Result, body: bytes | None, worker: WorkerProcess) -> None:
        run = self.jobs.sent_to(event.id, worker)
        if run is None:
            return
        self.jobs.pop(event.id)
        if not run.future.done():
            run.resolve(finished(event, body or b"", run.held))

    def _on_refused(self, event: Refused, body: bytes | None, worker: WorkerProcess) -> None:
        """The worker refused a request: the run that sent it ends now, with the reason."""
        run = self.jobs.sent_to(event.id, worker)
        if run is None or event.id is None:
            log.warning("the worker refused a request: %s", event.error)
            return
        self.jobs.pop(event.id)
        run.resolve(JobResult(JobStatus.ERROR, error=f"the worker refused the job: {event.error}"))

    # ----------------------------------------------------------------- jobs
    async def run(
        self,
        target: str,
        params: JsonValue,
        *,
        timeout: float = 10.0,
        job_id: str | None = None,
        on_partial: Callable[[JsonValue], None] | None = None,
        policy: JobPolicy | None = None,
        sources: tuple[str, ...] = (),
    ) -> JobResult:
        """Run ``target(params)`` in a fresh fork of the warm worker.

        ``on_partial`` gets each value the job sends ahead of its result (``send_partial``);
        ``policy`` is what the job may do and use (its limits replace the worker's);
        ``sources`` are the absolute paths of the job's own code (its document, its project
        root): it runs without a learned library that it would shadow or that is its own.
        """
        key, older = self.jobs.new_key(job_id)
        if older is not None:
            task = asyncio.ensure_future(self._send_cancel(older))
            task.add_done_callback(lambda t: t.exception())
        try:
            # encoded once, first: params that are not JSON data raise here, before anything
            # is sent; a run sent again (its worker died before starting it) sends these bytes
            request = RunRequest(key, target, timeout, policy or JobPolicy(), 0, tuple(sources))
            frames = with_body(message_of(request), dumps(params))
            for _ in range(_DELIVERY_ATTEMPTS - 1):
                result, undelivered = await self._run_once(key, frames, timeout, on_partial)
                if not undelivered or self._closed:
                    return result
            return (await self._run_once(key, frames, timeout, on_partial))[0]
        finally:
            self.jobs.release(key, job_id)

    async def _run_once(
        self,
        key: int,
        frames: bytes,
        timeout: float,
        on_partial: Callable[[JsonValue], None] | None,
    ) -> tuple[JobResult, bool]:
        """The run's result, and whether it never reached a worker (it may be sent again)."""
        if self.jobs.is_superseded(key):
            return superseded(), False
        try:
            await self.start()
        except (OSError, WorkerError) as exc:
            return JobResult(JobStatus.CRASHED, error=f"could not start the worker: {exc}"), False
        worker = self._worker
        if self.jobs.is_superseded(key):
            return superseded(), False
        assert worker is not None
        run = self.jobs.add(key, worker, on_partial)
        try:
            await worker.send(frames)
        except (ConnectionError, RuntimeError, OSError):
            # the worker died before the job reached it: the job never ran
            self.jobs.pop(key)
            worker.forget()
            return JobResult(JobStatus.CRASHED, error="the worker process died"), True
        try:
            result = await asyncio.wait_for(asyncio.shield(run.future), timeout + TIMEOUT_GUARD_S)
        except TimeoutError:
            await self._cancel(key)
            return JobResult(JobStatus.TIMEOUT, error=f"timed out after {timeout:g} s"), False
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(key))
            raise
        return result, run.undelivered

    async def warm(self, modules: list[str], roots: list[str] | None = None) -> None:
        """Ask the worker to learn the libraries of ``modules`` (e.g. a workspace's imports)
        in the background, none from inside ``roots`` (the workspace folders). Starts the
        worker if it is not running."""
        roots = list(roots or [])
        self.config = replace(self.config,
                              roots=tuple(dict.fromkeys([*self.config.roots, *roots])))
        await self.start()
        worker = self._worker
        if worker is not None:
            with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                await worker.send(message_of(WarmRequest(tuple(modules), tuple(roots))))

    async def _cancel(self, key: int) -> None:
        run = self.jobs.pop(key)
        if run is not None and not run.future.done():
            run.future.cancel()
        await self._send_cancel(key)

    async def _send_cancel(self, key: int) -> None:
        worker = self._worker
        if worker is not None and worker.proc.returncode is None:
            with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                await worker.send(message_of(CancelRequest(key)))


def _spawn_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The worker's environment: ``env`` (else this process's) with fxls alone on
    PYTHONPATH."""
    worker_env = dict(os.environ if env is None else env)
    # a workspace folder on PYTHONPATH would shadow the standard library and run its
    # sitecustomize while the interpreter starts, before any fxls code could stop it
    worker_env["PYTHONPATH"] = REPO_ROOT
    # torch warns at import when numpy is absent; user code's own warnings are captured
    worker_env.setdefault("PYTHONWARNINGS",
                          "ignore::UserWarning:torch._subclasses.functional_tensor")
    return worker_env


def _user_python_path(env: dict[str, str] | None) -> tuple[str, ...]:
    """The caller's absolute PYTHONPATH entries (relative ones would resolve against the
    working directory, the workspace): the worker puts them on ``sys.path`` once the
    interpreter started, for the jobs (``fxls.worker.__main__.outside_the_workspace``)."""
    source = os.environ if env is None else env
    return tuple(p for p in dict.fromkeys(source.get("PYTHONPATH", "").split(os.pathsep))
                 if os.path.isabs(p) and p != REPO_ROOT)


def _remove_dirs(paths: list[str]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    paths.clear()


def _ignore(event: Event, body: bytes | None, worker: WorkerProcess) -> None:
    pass
