"""An idle job process's pipe from the worker: *warmth* frames (``protocol.WARMTH``: values
earlier jobs sent with ``api.send_warmth``) may come while it waits, then its job's frames,
then EOF.

The pipe is read on a thread, so the worker never blocks writing; the process's main thread
runs the warm-up, then the job package's ``warm_from`` on each warmth value until the job
is here (``api.job_waiting``). The job's frames are handed on as they came, without the
warmth ones.
"""

from __future__ import annotations

import os
import queue
import threading

from fxls.worker import api
from fxls.worker.protocol import HEADER, WARMTH, FrameBuffer, JsonValue, decode, peek_status

#: the bytes of warmth an idle process takes at most (the worker sends a few values)
WARMTH_LIMIT = 8 * 1024 * 1024


class JobInbox:
    """The job pipe, read on its own thread from construction on."""

    def __init__(self, job_r: int) -> None:
        self._job_r = job_r
        self._job: list[bytes] = []
        self._warmth: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._warmth_bytes = 0
        self._reader = threading.Thread(target=self._read, name="fxls-job-inbox", daemon=True)
        self._reader.start()

    def next_warmth(self, wait_s: float = 0.05) -> JsonValue | None:
        """The next warmth value (None when none came within ``wait_s``, or once the job is
        here)."""
        while not api.job_waiting():
            try:
                body = self._warmth.get(timeout=wait_s)
            except queue.Empty:
                return None
            try:
                message = decode(body)
            except ValueError:
                continue
            return message.get("value") if isinstance(message, dict) else None
        return None

    def job_bytes(self) -> bytes:
        """The job's frames, once the pipe ended (empty: no job will come)."""
        self._reader.join()
        return b"".join(HEADER.pack(len(body)) + body for body in self._job)

    def _read(self) -> None:
        buffer = FrameBuffer()
        try:
            while chunk := os.read(self._job_r, 1 << 20):
                for body in buffer.bodies(chunk):
                    if not isinstance(body, bytes):
                        continue
                    if peek_status(body) == WARMTH:
                        self._take_warmth(body)
                    else:
                        self._job.append(body)
        except OSError:
            self._job.clear()
        finally:
            os.close(self._job_r)
            api.job_arrived()

    def _take_warmth(self, body: bytes) -> None:
        if not self._job and self._warmth_bytes + len(body) <= WARMTH_LIMIT:
            self._warmth_bytes += len(body)
            self._warmth.put(body)
