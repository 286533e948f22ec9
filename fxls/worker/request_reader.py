"""The worker's side of the client's channel: bytes in, requests out, each decoded once.

A ``run`` request's params are the frame after its envelope (``protocol.with_body``): they
are never decoded here, only handed on, with the envelope as it came, to the job process,
which decodes both (``child``). A request that does not fit the protocol is answered at
once (``Refused``), so its sender is not left waiting for a timeout; bytes that are not a
request at all are one log line.
"""

from __future__ import annotations

from collections.abc import Callable

from fxls.worker.messages import Refused, Request, RunRequest, decode_request
from fxls.worker.protocol import (
    REQUEST_LIMIT,
    FrameBuffer,
    Oversized,
    ProtocolError,
    decode,
    frame,
)

#: a request and what is attached to it: for a run, its envelope and params frames as the
#: job process reads them; else nothing
Arrival = tuple[Request, bytes]


class RequestReader:
    """Splits the channel's bytes into requests (``take``)."""

    def __init__(self, log: Callable[[str], None], limit: int = REQUEST_LIMIT) -> None:
        self.log = log
        self.limit = limit
        self._frames = FrameBuffer(limit)
        #: a run whose params are the next frame, with its envelope as it came
        self._run: tuple[RunRequest, bytes] | None = None
        #: the next frame is the body of a refused request: skipped
        self._skip_body = False

    def take(self, data: bytes) -> list[Arrival | Refused]:
        """The requests completed by ``data``, and the answers to those refused."""
        found: list[Arrival | Refused] = []
        for body in self._frames.bodies(data):
            item = self._params(body) if self._run is not None else self._request(body)
            if item is not None:
                found.append(item)
        return found

    def _params(self, body: bytes | Oversized) -> Arrival | Refused:
        assert self._run is not None
        run, envelope = self._run
        self._run = None
        if isinstance(body, Oversized):
            return Refused(run.id, f"its params are {body.size:,} bytes (limit {self.limit:,})")
        return run, frame(envelope) + frame(body)

    def _request(self, body: bytes | Oversized) -> Arrival | Refused | None:
        if self._skip_body:
            self._skip_body = False
            return None
        if isinstance(body, Oversized):
            self.log(f"ignored a request of {body.size} bytes (limit {self.limit})")
            return None
        try:
            message = decode(body)
        except (ValueError, RecursionError) as error:
            self.log(f"ignored a request that is not JSON ({error})")
            return None
        try:
            request = decode_request(message)
        except ProtocolError as error:
            self.log(f"refused a request: {error}")
            request_id = message.get("id") if isinstance(message, dict) else None
            attached = message.get("body") if isinstance(message, dict) else None
            self._skip_body = isinstance(attached, int) and not isinstance(attached, bool)
            return Refused(request_id if isinstance(request_id, int) else None, str(error))
        if isinstance(request, RunRequest):
            self._run = request, body
            return None
        return request, b""
