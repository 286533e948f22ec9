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

import threading
from typing import Any

from fxls.worker.protocol import PARTIAL, encode_status, write_all

#: the result pipe of the job this process runs; None outside a job
_result_fd: int | None = None
#: set once this process's job has arrived (while the warm-up may still be running)
_job_arrived = threading.Event()


def send_partial(value: Any) -> bool:
    """Send part of the result ahead of the final one (the caller may act on it at once).

    False when not running in a job, or when ``value`` is not JSON data (nothing is sent).
    """
    if _result_fd is None:
        return False
    try:
        frame = encode_status(PARTIAL, value=value)
    except (TypeError, ValueError):
        return False
    write_all(_result_fd, frame)
    return True


def job_waiting() -> bool:
    """For a warm-up: the job has arrived, so stop at the next safe point."""
    return _job_arrived.is_set()


def begin_job(result_fd: int) -> None:
    """The worker's side: from now on this process runs a job answering on ``result_fd``."""
    global _result_fd
    _result_fd = result_fd


def job_arrived() -> None:
    """The worker's side: the job is here (a running warm-up should stop)."""
    _job_arrived.set()
