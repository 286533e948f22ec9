"""Noticing a worker that stopped answering: a job can stop its parent
(``os.kill(os.getppid(), signal.SIGSTOP)``), and a stopped worker never reads another job.

The client pings the worker every ``interval_s``; any message from it counts as an answer.
Silent for ``silent_limit_s`` means unresponsive: the client kills and replaces it. While
the worker said it is busy (importing what jobs taught it, which blocks its loop for
seconds), the limit is ``busy_limit_s``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from fxls.worker.protocol import Op

#: ops the worker sends: ``busy`` before a step that blocks its loop, ``pong`` to a ping
BUSY, PONG = Op.BUSY, Op.PONG


@dataclass
class Heartbeat:
    silent_limit_s: float = 10.0
    busy_limit_s: float = 300.0
    last_heard: float = field(default_factory=time.monotonic)
    busy: bool = False

    @property
    def interval_s(self) -> float:
        return max(0.1, self.silent_limit_s / 4)

    def heard(self, op: object) -> None:
        self.last_heard = time.monotonic()
        self.busy = op == BUSY

    def silent_for(self) -> float:
        return time.monotonic() - self.last_heard

    def overdue(self) -> bool:
        return self.silent_for() > (self.busy_limit_s if self.busy else self.silent_limit_s)


def why_silent(pid: int, seconds: float) -> str:
    """A user's description of a worker that stopped answering."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        state = ""
    if state in ("T", "t"):
        return (f"the worker process was stopped (SIGSTOP; did the analysed code stop its "
                f"parent?) and did not answer for {seconds:.0f} s; it was replaced")
    return f"the worker process did not answer for {seconds:.0f} s; it was replaced"
