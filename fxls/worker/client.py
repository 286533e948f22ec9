"""The caller's side: start the warm worker, run jobs in it, survive its death.

Every message from the worker is checked against the protocol (``protocol.EVENTS``) and
dispatched through one table (``WorkerClient._handlers``); a job's own bytes (its partial and
final results) are decoded here, as untrusted input: one that is not JSON, or not an object,
makes that job's result ``invalid`` and nothing else. Partial results past
``FORWARDED_PARTIALS`` are coalesced.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxls.worker.heartbeat import Heartbeat, why_silent
from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import (
    ENVELOPE_LIMIT,
    EVENTS,
    FORWARDED_PARTIALS,
    HEADER,
    JOB_FRAME_LIMIT,
    JOB_OWN_STATUSES,
    PROTOCOL_VERSION,
    JobStatus,
    Op,
    ProtocolError,
    check_message,
    check_version,
    decode,
    encode,
)
from fxls.worker.sandbox import new_jobs_dir

log = logging.getLogger(__name__)

#: the directory holding ``fxls`` and ``fxcore``; put on the worker's PYTHONPATH
REPO_ROOT = str(Path(__file__).resolve().parents[2])
#: extra time the client waits beyond a job's timeout before giving up on the worker
TIMEOUT_GUARD_S = 10.0
STARTUP_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 3.0
#: attempts for a job the worker never started because it died first
_DELIVERY_ATTEMPTS = 3


@dataclass
class JobResult:
    status: JobStatus
    value: Any = None  # the target's return value (plain JSON data) when ok
    error: str | None = None  # human-readable detail (traceback, signal, exit code, ...)
    output: str = ""  # captured stdout+stderr of the job (tail)
    duration_ms: float = 0.0
    #: the newest partial result that was coalesced, not given to ``on_partial`` (a job sent
    #: more than ``FORWARDED_PARTIALS``); the final result may refer to it
    last_partial: Any = None
    #: a job that did not end on its own: [file, line] of the innermost frame of each file
    #: its main thread was last seen in (``fxls.worker.where``; untrusted)
    where: Any = None


@dataclass
class _Pending:
    future: asyncio.Future[dict[str, Any]]
    proc: asyncio.subprocess.Process  # the worker the job was sent to
    started: bool = False  # the worker acknowledged it (a fork is running the job)
    on_partial: Callable[[Any], None] | None = None
    partials: int = 0  # partial results received
    held: bytes | None = None  # the newest coalesced partial result, undecoded


_SUPERSEDED = {"status": JobStatus.CANCELLED,
               "error": "superseded by a newer job with the same job_id"}


class WorkerError(RuntimeError):
    """The worker could not be started."""


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
        Modules of the packages named in
        ``learn_imports`` (e.g. ``("torch._dynamo",)``; ``("torch",)`` for all of it) that a
        job imported are imported by the warm worker after that job, so later jobs find them
        loaded (``fxls.worker.worker_imports`` decides which). With ``learn_libraries``, the
        installed third-party libraries jobs import are imported by the zygote that forks
        the job processes, for later jobs (``fxls.worker.library_learner``; ``warm`` names some
        ahead of any job). With ``sandbox``, jobs run
        confined (``fxls.worker.sandbox``; ``run(policy=...)`` widens it per job). A worker
        that answers nothing for ``unresponsive_after_s`` is replaced (``heartbeat``).
        ``roots`` (workspace and project roots; the working directory is one) are where
        the worker never imports from outside a job, even with them on PYTHONPATH."""
        self.python = python
        self.warm_imports = tuple(warm_imports)
        self.learn_imports = tuple(learn_imports)
        self.learn_libraries = learn_libraries
        self.roots = [os.getcwd(), *roots]
        self.warm_up = warm_up
        #: the worker's zygote, which forks the job processes (None: the worker forks them)
        self.zygote_pid: int | None = None
        self.prime = prime
        self.env = env
        self.memory_limit_mb = memory_limit_mb
        self.cpu_limit_s = cpu_limit_s
        self.import_errors: dict[str, str] = {}
        self.sandbox = sandbox
        #: what the kernel enforces for this worker's jobs (None: sandbox off or not started)
        self.sandbox_support: dict[str, Any] | None = None
        self._jobs_dirs: list[str] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.unresponsive_after_s = unresponsive_after_s
        self._watcher: asyncio.Task[None] | None = None
        #: why a worker this client killed went silent (the reader reports it)
        self._silenced: dict[int, str] = {}
        self._pending: dict[int, _Pending] = {}
        self._job_ids: dict[str, int] = {}
        self._superseded: set[int] = set()
        self._ids = itertools.count(1)
        self._start_lock = asyncio.Lock()
        self._write_lock = asyncio.Lock()
        self._closed = False
        #: one handler per message of the worker's (``protocol.EVENTS``)
        self._handlers: dict[Op, Callable[[dict[str, Any], bytes | None, _Pending | None],
                                          None]] = {
            Op.STARTED: self._on_started, Op.PARTIAL: self._on_partial,
            Op.RESULT: self._on_result, Op.ERROR: self._on_error,
            Op.READY: _ignore, Op.PONG: _ignore, Op.BUSY: _ignore,
        }

    @property
    def pid(self) -> int | None:
        """The worker's pid while it runs."""
        return self._proc.pid if self._alive() else None

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
        self._fail_pending({"status": JobStatus.CANCELLED, "error": "the worker was closed"})
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(Exception):
                await self._send_to(proc, {"op": Op.SHUTDOWN})
            with contextlib.suppress(Exception):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), CLOSE_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for task in (self._reader, self._watcher):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._reader = self._watcher = None
        self._fail_pending({"status": JobStatus.CANCELLED, "error": "the worker was closed"})
        _remove_dirs(self._jobs_dirs)

    def _alive(self) -> bool:
        return (
            self._proc is not None
            and self._proc.returncode is None
            and self._reader is not None
            and not self._reader.done()
        )

    async def _spawn(self) -> None:
        config = {
            "protocol": PROTOCOL_VERSION,
            "warm_imports": list(self.warm_imports),
            "memory_limit_mb": self.memory_limit_mb,
            "cpu_limit_s": self.cpu_limit_s,
            "warm_up": self.warm_up,
            "prime": self.prime,
            "learn_imports": list(self.learn_imports),
            "learn_libraries": self.learn_libraries,
            "roots": self.roots,
            "python_path": self._user_python_path(),
            **self._sandbox_config(),
        }
        proc = await asyncio.create_subprocess_exec(
            *worker_command(self.python),
            json.dumps(config),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=self._worker_env(),
            start_new_session=True,  # a job that kills its worker's group misses the caller
        )
        assert proc.stdout is not None
        try:
            ready, _ = await asyncio.wait_for(_read_message(proc.stdout), STARTUP_TIMEOUT_S)
            _check_ready(ready)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, ProtocolError):
                raise WorkerError(f"the worker ({self.python} -m fxls.worker) refused to "
                                  f"work with this fxls: {exc}") from exc
            raise WorkerError(
                f"the worker ({self.python} -m fxls.worker) did not start: exit code "
                f"{proc.returncode}; see its stderr"
            ) from exc
        self.import_errors = dict(ready.get("import_errors") or {})
        self.zygote_pid = ready.get("zygote")
        self._note_sandbox(ready.get("sandbox"))
        self._proc = proc
        heartbeat = Heartbeat(self.unresponsive_after_s)
        self._reader = asyncio.create_task(self._read_loop(proc, heartbeat))
        self._watcher = asyncio.create_task(self._watch(proc, heartbeat))

    def _sandbox_config(self) -> dict[str, Any]:
        """A fresh folder for the jobs' private folders (the last worker's is gone)."""
        if not self.sandbox:
            return {}
        _remove_dirs(self._jobs_dirs)
        self._jobs_dirs.append(new_jobs_dir())
        return {"sandbox": True, "jobs_dir": self._jobs_dirs[-1]}

    def _note_sandbox(self, facts: dict[str, Any] | None) -> None:
        """Say once in the log what the kernel does not enforce."""
        first = self.sandbox_support is None
        self.sandbox_support = facts
        if facts and first:
            summary = facts.get("summary", "")
            (log.warning if "NOT enforced" in summary else log.info)("%s", summary)

    def _user_python_path(self) -> list[str]:
        """The caller's absolute PYTHONPATH entries (relative ones would resolve against the
        working directory, the workspace): the worker puts them on ``sys.path`` once the
        interpreter started, for the jobs (``fxls.worker.__main__.outside_the_workspace``)."""
        env = os.environ if self.env is None else self.env
        return [p for p in dict.fromkeys(env.get("PYTHONPATH", "").split(os.pathsep))
                if os.path.isabs(p) and p != REPO_ROOT]

    def _worker_env(self) -> dict[str, str]:
        env = dict(os.environ if self.env is None else self.env)
        # a workspace folder on PYTHONPATH would shadow the standard library and run its
        # sitecustomize while the interpreter starts, before any fxls code could stop it
        env["PYTHONPATH"] = REPO_ROOT
        # torch warns at import when numpy is absent; user code's own warnings are captured
        env.setdefault("PYTHONWARNINGS", "ignore::UserWarning:torch._subclasses.functional_tensor")
        return env

    async def _read_loop(self, proc: asyncio.subprocess.Process, heartbeat: Heartbeat) -> None:
        assert proc.stdout is not None
        try:
            while True:
                message, body = await _read_message(proc.stdout)
                heartbeat.heard(message.get("op") if isinstance(message, dict) else None)
                self._on_message(message, body, proc)
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            if not self._closed and proc.returncode is None:
                log.warning("the worker's channel ended: %s", error)
        except ProtocolError as error:  # the stream itself is broken: replace the worker
            log.warning("the worker broke the protocol: %s", error)
        finally:
            if self._proc is proc:
                self._proc = None
            code = proc.returncode
            if code is None:
                with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                    code = await asyncio.wait_for(proc.wait(), 1.0)
            detail = self._silenced.pop(proc.pid, None) or (
                f"the worker process died ({_describe_exit(code)})")
            if not self._closed:
                log.warning("%s; the next job starts a new worker", detail)
            self._fail_pending({"status": JobStatus.CRASHED, "error": detail}, proc)

    async def _watch(self, proc: asyncio.subprocess.Process, heartbeat: Heartbeat) -> None:
        """Ping the worker; kill it once it stays silent too long (the reader then fails
        its runs and the next job starts a new worker)."""
        while proc is self._proc and proc.returncode is None:
            await asyncio.sleep(heartbeat.interval_s)
            if heartbeat.overdue():
                detail = why_silent(proc.pid, heartbeat.silent_for())
                log.warning("%s", detail)
                self._silenced[proc.pid] = detail
                self._forget(proc)
                return
            if not self._write_lock.locked():  # a stopped worker may block a write: skip
                with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                    await self._send_to(proc, {"op": Op.PING})

    def _on_message(
        self, message: Any, body: bytes | None, proc: asyncio.subprocess.Process
    ) -> None:
        """Check a message of the worker's and dispatch it; one that does not fit the
        protocol is one log line."""
        try:
            op = check_message(message, EVENTS)
        except ProtocolError as error:
            log.warning("ignored a message from the worker: %s", error)
            return
        pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if pending is not None and pending.proc is not proc:
            pending = None
        self._handlers[op](message, body, pending)

    def _on_started(
        self, message: dict[str, Any], body: bytes | None, pending: _Pending | None
    ) -> None:
        if pending is not None:
            pending.started = True

    def _on_partial(
        self, message: dict[str, Any], body: bytes | None, pending: _Pending | None
    ) -> None:
        """The first ``FORWARDED_PARTIALS`` go to the caller; later ones are coalesced: the
        newest is kept, undecoded, and comes with the result."""
        if pending is None or pending.future.done() or body is None:
            return
        pending.partials += 1
        if pending.partials > FORWARDED_PARTIALS:
            pending.held = body
            return
        try:
            value = job_body(body).get("value")
        except ProtocolError as error:
            log.warning("ignored a partial result of job %s: %s", message["id"], error)
            return
        if pending.on_partial is not None:
            try:
                pending.on_partial(value)
            except Exception as error:  # the caller's callback must not stop the reader
                log.warning("a partial-result callback failed: %s: %s",
                            type(error).__name__, error)

    def _on_result(
        self, message: dict[str, Any], body: bytes | None, pending: _Pending | None
    ) -> None:
        if pending is None:
            return
        del self._pending[message["id"]]
        if pending.future.done():
            return
        outcome = {**message, "value": None, "error": None}
        try:
            status = message["status"]
            if status not in JobStatus.__members__.values() or (
                    message["own"] and status not in JOB_OWN_STATUSES):
                raise ProtocolError(f"it says its status is {status[:40]!r}")
            data = job_body(body or b"")
            error = data.get("error")
            if error is not None and not isinstance(error, str):
                raise ProtocolError(f"its 'error' is a {type(error).__name__}")
            outcome.update(value=data.get("value"), error=error)
        except ProtocolError as problem:
            outcome.update(status=JobStatus.INVALID, error=f"the job's result is invalid: "
                           f"{problem}")
        if pending.held is not None:
            with contextlib.suppress(ProtocolError):
                outcome["last_partial"] = job_body(pending.held).get("value")
        pending.future.set_result(outcome)

    def _on_error(
        self, message: dict[str, Any], body: bytes | None, pending: _Pending | None
    ) -> None:
        """The worker refused a request: the run that sent it ends now, with the reason."""
        if pending is None:
            log.warning("the worker refused a request: %s", message["error"])
            return
        del self._pending[message["id"]]
        if not pending.future.done():
            pending.future.set_result({"status": JobStatus.ERROR,
                                       "error": f"the worker refused the job: {message['error']}"})

    def _fail_pending(
        self, outcome: dict[str, Any], proc: asyncio.subprocess.Process | None = None
    ) -> None:
        """Resolve the runs sent to ``proc`` (all runs when None) with ``outcome``.

        Runs the worker never acknowledged are marked for a retry on a new worker.
        """
        for key, entry in list(self._pending.items()):
            if proc is not None and entry.proc is not proc:
                continue
            del self._pending[key]
            if not entry.future.done():
                retry = outcome["status"] == JobStatus.CRASHED and not entry.started
                entry.future.set_result({**outcome, "retry": retry})

    # ----------------------------------------------------------------- jobs
    async def run(
        self,
        target: str,
        params: dict[str, Any],
        *,
        timeout: float = 10.0,
        job_id: str | None = None,
        on_partial: Callable[[Any], None] | None = None,
        policy: JobPolicy | None = None,
        sources: tuple[str, ...] = (),
    ) -> JobResult:
        """Run ``target(params)`` in a fresh fork of the warm worker.

        ``on_partial`` gets each value the job sends ahead of its result (``send_partial``);
        ``policy`` is what the job may do and use (its limits replace the worker's);
        ``sources`` are the absolute paths of the job's own code (its document, its project
        root): it runs without a learned library that it would shadow or that is its own.
        """
        key = next(self._ids)
        if job_id is not None:
            self._cancel_job_id(job_id)
            self._job_ids[job_id] = key
        try:
            message: dict[str, Any] = {}
            for _ in range(_DELIVERY_ATTEMPTS):
                message = await self._run_once(key, target, params, timeout, on_partial,
                                               policy, sources)
                if not message.get("retry") or self._closed:
                    break
            return _job_result(message)
        finally:
            self._superseded.discard(key)
            if job_id is not None and self._job_ids.get(job_id) == key:
                del self._job_ids[job_id]

    async def _run_once(
        self,
        key: int,
        target: str,
        params: dict[str, Any],
        timeout: float,
        on_partial: Callable[[Any], None] | None,
        policy: JobPolicy | None = None,
        sources: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        if key in self._superseded:
            return _SUPERSEDED
        try:
            await self.start()
        except (OSError, WorkerError) as exc:
            return {"status": JobStatus.CRASHED, "error": f"could not start the worker: {exc}"}
        proc = self._proc
        if key in self._superseded:
            return _SUPERSEDED
        assert proc is not None
        # encoded first: params that are not JSON data raise here, before anything is sent
        request = encode({"op": Op.RUN, "id": key, "target": target, "params": params,
                          "timeout": timeout, "sources": list(sources),
                          "policy": policy.to_dict() if policy is not None else None})
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[key] = _Pending(future, proc, on_partial=on_partial)
        try:
            await self._send_to(proc, request)
        except (ConnectionError, RuntimeError, OSError):
            # the worker died before the job reached it: the job never ran
            self._pending.pop(key, None)
            self._forget(proc)
            return {"status": JobStatus.CRASHED, "error": "the worker process died", "retry": True}
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout + TIMEOUT_GUARD_S)
        except TimeoutError:
            await self._cancel(key)
            return {"status": JobStatus.TIMEOUT, "error": f"timed out after {timeout:g} s"}
        except asyncio.CancelledError:
            await asyncio.shield(self._cancel(key))
            raise

    async def warm(self, modules: list[str], roots: list[str] | None = None) -> None:
        """Ask the worker to learn the libraries of ``modules`` (e.g. a workspace's imports)
        in the background, none from inside ``roots`` (the workspace folders). Starts the
        worker if it is not running."""
        self.roots = list(dict.fromkeys([*self.roots, *(roots or [])]))
        await self.start()
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                await self._send_to(proc, {"op": Op.WARM, "modules": list(modules),
                                           "roots": list(roots or [])})

    def _cancel_job_id(self, job_id: str) -> None:
        """Cancel the run still holding ``job_id``: it returns "cancelled" at once."""
        old = self._job_ids.pop(job_id, None)
        if old is None:
            return
        self._superseded.add(old)
        pending = self._pending.pop(old, None)
        if pending is not None and not pending.future.done():
            pending.future.set_result(_SUPERSEDED)
        task = asyncio.ensure_future(self._send_cancel(old))
        task.add_done_callback(lambda t: t.exception())

    async def _cancel(self, key: int) -> None:
        pending = self._pending.pop(key, None)
        if pending is not None and not pending.future.done():
            pending.future.cancel()
        await self._send_cancel(key)

    async def _send_cancel(self, key: int) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                await self._send_to(proc, {"op": Op.CANCEL, "id": key})

    async def _send_to(
        self, proc: asyncio.subprocess.Process, message: dict[str, Any] | bytes
    ) -> None:
        assert proc.stdin is not None
        data = message if isinstance(message, bytes) else encode(message)
        async with self._write_lock:
            proc.stdin.write(data)
            await proc.stdin.drain()

    def _forget(self, proc: asyncio.subprocess.Process) -> None:
        """Drop a dead worker so that the next job starts a new one."""
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        if self._proc is proc:
            self._proc = None


def worker_command(python: str) -> list[str]:
    """``-P``: the working directory (a workspace) never goes on the worker's ``sys.path``."""
    return [python, "-P", "-m", "fxls.worker"]


def _remove_dirs(paths: list[str]) -> None:
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    paths.clear()


def _ignore(message: dict[str, Any], body: bytes | None, pending: _Pending | None) -> None:
    pass


async def _read_message(stream: asyncio.StreamReader) -> tuple[Any, bytes | None]:
    """The worker's next message (its envelope, decoded) and the job's bytes that follow it
    (``protocol.attach``), if any. ProtocolError when the stream itself cannot be trusted
    any more (an envelope too large or not JSON: the worker is replaced)."""
    header = await stream.readexactly(HEADER.size)
    (size,) = HEADER.unpack(header)
    if size > ENVELOPE_LIMIT:
        raise ProtocolError(f"a message of {size:,} bytes (limit {ENVELOPE_LIMIT:,})")
    try:
        message = decode(await stream.readexactly(size))
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"a message that is not JSON: {error}") from None
    length = message.get("body") if isinstance(message, dict) else None
    if not isinstance(length, int) or isinstance(length, bool):
        return message, None
    if not 0 <= length <= JOB_FRAME_LIMIT:
        raise ProtocolError(f"a job frame of {length:,} bytes (limit {JOB_FRAME_LIMIT:,})")
    return message, await stream.readexactly(length)


def job_body(body: bytes) -> dict[str, Any]:
    """A job's frame (untrusted), decoded: a JSON object, else ProtocolError."""
    try:
        data = decode(body)
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"not a JSON object but a {type(data).__name__}")
    return data


def _check_ready(message: Any) -> None:
    """The handshake's second half: the worker's first message is ``ready`` in this
    protocol's version (or an ``error`` saying why it refused)."""
    if isinstance(message, dict) and message.get("op") == Op.ERROR:
        raise ProtocolError(str(message.get("error")))
    check_message(message, {Op.READY: EVENTS[Op.READY]})
    check_version(message.get("protocol"), "the worker")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown exit status"
    if code < 0:
        import signal

        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def _job_result(message: dict[str, Any]) -> JobResult:
    return JobResult(
        status=_job_status(message.get("status")),
        value=message.get("value"),
        error=message.get("error"),
        output=message.get("output") or "",
        duration_ms=float(message.get("duration_ms") or 0.0),
        last_partial=message.get("last_partial"),
        where=message.get("where"),
    )


def _job_status(value: Any) -> JobStatus:
    try:
        return JobStatus(value)
    except ValueError:
        return JobStatus.CRASHED
