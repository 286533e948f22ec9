"""How a run ended, for the caller (``JobResult``), made from the worker's ``result`` message
and the job's own bytes that follow it.

The job's bytes are untrusted (it runs the user's code, which can write to its result pipe):
they are decoded here as such. One that is not JSON, or not an object, or claims a status
only the worker may give (``cancelled``, ``timeout``...), makes the result ``invalid``, and
nothing else.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from fxls.worker.messages import Result, WhereLines
from fxls.worker.protocol import JOB_OWN_STATUSES, JobStatus, JsonValue, ProtocolError, decode


@dataclass(frozen=True, slots=True)
class JobResult:
    status: JobStatus
    value: JsonValue = None  # the target's return value (plain JSON data) when ok
    error: str | None = None  # human-readable detail (traceback, signal, exit code, ...)
    output: str = ""  # captured stdout+stderr of the job (tail)
    duration_ms: float = 0.0
    #: the newest partial result that was coalesced, not given to ``on_partial`` (a job sent
    #: more than ``FORWARDED_PARTIALS``); the final result may refer to it
    last_partial: JsonValue = None
    #: a job that did not end on its own: [file, line] of the innermost frame of each file
    #: its main thread was last seen in (``fxls.worker.where``; untrusted)
    where: WhereLines | None = None


def finished(event: Result, body: bytes, held_partial: bytes | None) -> JobResult:
    """The result of a job the worker says ended (``event``), whose final frame is ``body``;
    ``held_partial``: its newest partial frame that was coalesced, if any."""
    last_partial = None
    if held_partial is not None:
        with contextlib.suppress(ProtocolError):
            last_partial = job_body(held_partial).get("value")
    try:
        status = _status(event)
        data = job_body(body)
        error = data.get("error")
        if error is not None and not isinstance(error, str):
            raise ProtocolError(f"its 'error' is a {type(error).__name__}")
        value = data.get("value")
    except ProtocolError as problem:
        status, value, error = JobStatus.INVALID, None, f"the job's result is invalid: {problem}"
    return JobResult(status, value, error, event.output, event.duration_ms, last_partial,
                     event.where)


def _status(event: Result) -> JobStatus:
    """The status ``event`` gives, if its sender may give it (a job only its own)."""
    try:
        status = JobStatus(event.status)
    except ValueError:
        status = None
    if status is None or (event.own and status not in JOB_OWN_STATUSES):
        raise ProtocolError(f"it says its status is {event.status[:40]!r}")
    return status


def job_body(body: bytes) -> dict[str, JsonValue]:
    """A job's frame (untrusted), decoded: a JSON object, else ProtocolError."""
    try:
        data = decode(body)
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"not JSON ({error})") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"not a JSON object but a {type(data).__name__}")
    return data
