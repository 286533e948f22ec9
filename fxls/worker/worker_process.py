"""One worker process, as the client holds it: started with its configuration, past the
handshake (``ready`` in this protocol's version), read by a task of its own that passes every
message on, pinged, and killed once it stays silent too long (``heartbeat``; as
jupyter_client's ``KernelRestarter`` watches a kernel beside its manager). What its messages
mean, and what to do when it ends, is the client's (``WorkerClient``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable

from fxls.worker.heartbeat import Heartbeat, why_silent
from fxls.worker.messages import (
    PingRequest,
    Ready,
    ShutdownRequest,
    WorkerConfig,
    decode_event,
    message_of,
)
from fxls.worker.protocol import (
    ENVELOPE_LIMIT,
    HEADER,
    JOB_FRAME_LIMIT,
    JsonValue,
    Op,
    ProtocolError,
    check_version,
    decode,
    encode,
)

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 120.0
CLOSE_TIMEOUT_S = 3.0

#: gets each message (decoded, unchecked), the job's bytes that follow it, and its worker
OnMessage = Callable[[JsonValue, "bytes | None", "WorkerProcess"], None]
#: told, once, that a worker ended, and why in words
OnExit = Callable[["WorkerProcess", str], None]


class WorkerError(RuntimeError):
    """The worker could not be started."""


class WorkerProcess:
    """A running worker (``spawn``) and the tasks that read and watch it."""

    def __init__(self, proc: asyncio.subprocess.Process, ready: Ready, on_message: OnMessage,
                 on_exit: OnExit, unresponsive_after_s: float) -> None:
        self.proc = proc
        self.ready = ready
        self._on_message = on_message
        self._on_exit = on_exit
        #: stopped by ``close``, or given up (``forget``), or its channel ended
        self.closing = False
        self.forgotten = False
        self.ended = False
        #: why it was killed for its silence (its reader reports it)
        self._silenced: str | None = None
        self._write_lock = asyncio.Lock()
        heartbeat = Heartbeat(unresponsive_after_s)
        self._reader = asyncio.create_task(self._read_loop(heartbeat))
        self._watcher = asyncio.create_task(self._watch(heartbeat))

    @classmethod
    async def spawn(cls, python: str, config: WorkerConfig, env: dict[str, str],
                    on_message: OnMessage, on_exit: OnExit,
                    unresponsive_after_s: float) -> WorkerProcess:
        """Start ``python -m fxls.worker`` and wait for its ``ready`` (its warm imports are
        done); WorkerError if it does not start or speaks another protocol."""
        proc = await asyncio.create_subprocess_exec(
            *worker_command(python),
            config.to_json(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # a job that kills its worker's group misses the caller
        )
        assert proc.stdout is not None
        try:
            message, _ = await asyncio.wait_for(read_message(proc.stdout), STARTUP_TIMEOUT_S)
            ready = check_ready(message)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            if isinstance(exc, ProtocolError):
                raise WorkerError(f"the worker ({python} -m fxls.worker) refused to "
                                  f"work with this fxls: {exc}") from exc
            raise WorkerError(
                f"the worker ({python} -m fxls.worker) did not start: exit code "
                f"{proc.returncode}; see its stderr"
            ) from exc
        return cls(proc, ready, on_message, on_exit, unresponsive_after_s)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return (not (self.ended or self.forgotten) and self.proc.returncode is None
                and not self._reader.done())

    async def send(self, message: dict[str, JsonValue] | bytes) -> None:
        """Send a message, or frames already encoded."""
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else encode(message)
        async with self._write_lock:
            self.proc.stdin.write(data)
            await self.proc.stdin.drain()

    def forget(self) -> None:
        """Give this worker up (the next job starts a new one): kill it; its reader then
        reports its end."""
        self.forgotten = True
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    async def close(self) -> None:
        """Ask the worker to stop (killed if it does not within ``CLOSE_TIMEOUT_S``) and end
        the tasks that read and watch it."""
        self.closing = True
        proc = self.proc
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.send(message_of(ShutdownRequest()))
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
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _read_loop(self, heartbeat: Heartbeat) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                message, body = await read_message(stdout)
                heartbeat.heard(message.get("op") if isinstance(message, dict) else None)
                self._on_message(message, body, self)
        except (asyncio.IncompleteReadError, ConnectionError) as error:
            if not self.closing and self.proc.returncode is None:
                log.warning("the worker's channel ended: %s", error)
        except ProtocolError as error:  # the stream itself is broken: replace the worker
            log.warning("the worker broke the protocol: %s", error)
        finally:
            self.ended = True
            code = self.proc.returncode
            if code is None:
                with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                    code = await asyncio.wait_for(self.proc.wait(), 1.0)
            self._on_exit(self, self._silenced or
                          f"the worker process died ({_describe_exit(code)})")

    async def _watch(self, heartbeat: Heartbeat) -> None:
        """Ping the worker; kill it once it stays silent too long (the reader then reports
        its end, and the next job starts a new worker)."""
        while self.alive():
            await asyncio.sleep(heartbeat.interval_s)
            if not self.alive():
                return
            if heartbeat.overdue():
                self._silenced = why_silent(self.pid, heartbeat.silent_for())
                log.warning("%s", self._silenced)
                self.forget()
                return
            if not self._write_lock.locked():  # a stopped worker may block a write: skip
                with contextlib.suppress(ConnectionError, RuntimeError, OSError):
                    await self.send(message_of(PingRequest()))


def worker_command(python: str) -> list[str]:
    """``-P``: the working directory (a workspace) never goes on the worker's ``sys.path``."""
    return [python, "-P", "-m", "fxls.worker"]


async def read_message(stream: asyncio.StreamReader) -> tuple[JsonValue, bytes | None]:
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


def check_ready(message: JsonValue) -> Ready:
    """The handshake's second half: the worker's first message is ``ready`` in this
    protocol's version (or an ``error`` saying why it refused)."""
    if isinstance(message, dict) and message.get("op") == Op.ERROR:
        raise ProtocolError(str(message.get("error")))
    ready = decode_event(message, expected=(Op.READY,))
    if not isinstance(ready, Ready):  # the only one expected
        raise ProtocolError(f"{ready.op.value!r} in place of 'ready'")
    check_version(ready.protocol, "the worker")
    return ready


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown exit status"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"
