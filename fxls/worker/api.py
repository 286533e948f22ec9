"""What a job may use of the worker: the whole contract between the two, in one place.

A *job* is ``package.module:function``, called with its params (JSON data) in a fresh fork
of the warm worker; it returns JSON data, or raises (the caller gets status ``error``, or
``memory`` for an out-of-memory error). While it runs it may send parts of its result ahead
(``send_partial``).

A job package may also give the worker a *warm-up* (``WorkerClient(warm_up=...)``): a
function ``package.module:function`` without arguments that exercises the job's own code on
bundled input, never the user's. The worker runs it once in itself after its imports
(``prime``), so every fork inherits the caches it fills, and, if asked, again in each idle
job process before its job arrives, so the job's first touches of the warm heap happen off
its clock. The worker silences its output, swallows its errors and puts ``sys.path`` back;
everything else the warm-up changes (random generators, modules it created) it must put back
itself. In an idle job process it should return soon after ``job_waiting()`` turns true.

The worker itself knows nothing of what its jobs import.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import HEADER, PARTIAL, WARMTH, WARMTH_BYTES

#: taken when the worker imports this module, before any user code: a job's user code may
#: rebind ``json.dumps`` or ``os.write``, and the job's report must still get out
_dumps = json.dumps
_write = os.write
_os_exit = os._exit
_getpid = os.getpid

#: the result pipe of the job this process runs; None outside a job
_result_fd: int | None = None
#: what the job this process runs may do and use (the default outside a job)
_policy = JobPolicy()
#: set once this process's job has arrived (while the warm-up may still be running)
_job_arrived = threading.Event()
#: one frame at a time on the result pipe: the job's own threads send too (``send_aside``),
#: and a large frame's write is not atomic
_frame_lock = threading.Lock()


def _new_frame_lock() -> None:
    global _frame_lock
    _frame_lock = threading.Lock()  # a fork's copy may have been taken by another thread


os.register_at_fork(after_in_child=_new_frame_lock)


def send_partial(value: object) -> bool:
    """Send part of the result ahead of the final one (the caller may act on it at once).

    False when not running in a job, or when ``value`` is not JSON data (nothing is sent).
    """
    return _send(PARTIAL, value)


def send_warmth(value: object) -> bool:
    """Give the job processes that take the next jobs ``value`` (JSON data, at most
    ``WARMTH_BYTES`` encoded): the worker keeps the last values (one per ``value["key"]``)
    and the idle job process next in line runs the package's ``warm_from(value)`` on them
    before its job arrives (``WorkerClient(warm_from=...)``). Data only: what it fills must
    be worth having for a later job of the same input.

    False when not running in a job or when ``value`` is not sent.
    """
    return _send(WARMTH, value, WARMTH_BYTES)


def _send(status: str, value: object, limit: int | None = None) -> bool:
    if _result_fd is None:
        return False
    try:
        frame = encode_frame(status, value=value)
    except (TypeError, ValueError, RecursionError):
        return False
    if limit is not None and len(frame) > limit:
        return False
    write_frame(_result_fd, frame)
    return True


class ProcessExit(SystemExit):
    """Raised in a job process by ``os._exit(code)`` of the job's code: the process would
    end without its report and without a trace of where. Like ``sys.exit()``, it ends the
    import or the trace that called it, and the analysis reports it at that line."""

    def __init__(self, code: Any) -> None:
        super().__init__(code)
        self.exit_code = code

    def __str__(self) -> str:
        return f"os._exit({self.exit_code!r}) would end the analysis process here"


ProcessExit.__module__ = "builtins"  # shown as ``ProcessExit: ...`` in a traceback


def catch_process_exits() -> None:
    """From now on ``os._exit`` in this job process raises ``ProcessExit`` (its own
    subprocesses, e.g. multiprocessing's workers, exit as usual): for a job that runs code it
    does not trust to end, e.g. at import, in ``forward`` or in a module it imports, and that
    wants to report where instead of vanishing."""
    job_pid = _getpid()

    def _exit(code: int) -> None:
        if _getpid() != job_pid:
            _os_exit(code)
        raise ProcessExit(code)

    for module in (os, sys.modules.get("posix")):
        if module is not None and getattr(module, "_exit", None) is _os_exit:
            module._exit = _exit  # type: ignore[attr-defined]


def encode_frame(status: str, **members: object) -> bytes:
    """``protocol.encode_status`` with the functions taken before any user code ran."""
    body = _dumps({"status": status, **members}, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body)) + body


def write_frame(fd: int, data: bytes) -> None:
    """``protocol.write_all`` with the functions taken before any user code ran."""
    with _frame_lock:
        _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_write(fd, view):]


def send_aside(status: str, value: object) -> bool | None:
    """For a thread of the job's own (``fxls.worker.where``): send a frame unless another
    is being written (False); None once the job's result is being sent (``end_job``)."""
    if not _frame_lock.acquire(blocking=False):
        return False
    try:
        if _result_fd is None:
            return None
        _write_all(_result_fd, encode_frame(status, value=value))
        return True
    finally:
        _frame_lock.release()


def job_waiting() -> bool:
    """For a warm-up: the job has arrived, so stop at the next safe point."""
    return _job_arrived.is_set()


def job_policy() -> JobPolicy:
    """What this job may do and use (``WorkerClient.run(policy=...)``), as the job process
    applied it before the job began: e.g. whether it may use the network."""
    return _policy


def begin_job(result_fd: int, policy: JobPolicy) -> None:
    """The worker's side: from now on this process runs a job answering on ``result_fd``,
    under ``policy``."""
    global _result_fd, _policy
    _result_fd, _policy = result_fd, policy


def end_job() -> None:
    """The worker's side: the job's result follows; nothing else may be sent."""
    global _result_fd
    with _frame_lock:
        _result_fd = None


def job_arrived() -> None:
    """The worker's side: the job is here (a running warm-up should stop)."""
    _job_arrived.set()
