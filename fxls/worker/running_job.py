"""A job as the worker sees it while it runs: its process, its clock, the frames and output
it sent, and, once it ended, the final frame that says how (``ended_body``).

A job's frames are untrusted (it runs the user's code): they are kept as bytes, bounded
(``protocol.JOB_FRAME_LIMIT``), read only for their status (``protocol.peek_status``).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

from fxls.worker.limits import JobWatch
from fxls.worker.pool import Child
from fxls.worker.protocol import JOB_FRAME_LIMIT, FrameBuffer, JobStatus, status_body

OUTPUT_TAIL = 64 * 1024
_READ_CHUNK = 1 << 16
_TRUNCATED = "[... earlier output truncated ...]\n"


@dataclass
class OutputTail:
    """The end of a job's stdout and stderr (``OUTPUT_TAIL`` bytes)."""

    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def append(self, data: bytes) -> None:
        self.data += data
        self.total += len(data)
        if len(self.data) > 2 * OUTPUT_TAIL:
            del self.data[: len(self.data) - OUTPUT_TAIL]

    def text(self) -> str:
        text = bytes(self.data[-OUTPUT_TAIL:]).decode("utf-8", errors="replace")
        return _TRUNCATED + text if self.total > OUTPUT_TAIL else text


@dataclass
class JobFrames:
    """What a job sent on its result pipe, undecoded."""

    #: the result frames (``partial`` ones, then the final one) as they arrive, bounded
    buffer: FrameBuffer = field(default_factory=lambda: FrameBuffer(JOB_FRAME_LIMIT))
    #: partial frames forwarded so far; past ``FORWARDED_PARTIALS`` only the newest is kept
    partials: int = 0
    held_partial: bytes | None = None
    #: the body of the final frame (``protocol.encode_status``), once it arrived
    final: bytes | None = None
    #: ``final`` is the job's own frame (untrusted), not one the worker made
    final_from_job: bool = False
    #: modules the job imported that the worker may learn (``worker_imports.learnable``)
    imports: list[str] = field(default_factory=list)
    #: every module the job imported (untrusted): its libraries may be learned
    libraries: object = None
    #: the last frame of its watchdog (``where``; untrusted): decoded only if the job is
    #: ended, so a flood of them costs the worker no decoding
    where: bytes | None = None
    #: what the next job processes may warm up from (``api.send_warmth``; untrusted)
    warmth: bytes | None = None


@dataclass
class Job:
    id: int
    child: Child
    started: float
    deadline: float | None
    timeout: float | None
    frames: JobFrames = field(default_factory=JobFrames)
    output: OutputTail = field(default_factory=OutputTail)
    killed_for: JobStatus | None = None
    oom_kills: int | None = None
    #: the job was asked to print where it is running (it is about to time out)
    dumped: bool = False
    #: its result went to the client already (sent at the result's EOF, before the exit)
    reported: bool = False
    #: samples its processes against its limits (None: no limits to watch)
    watch: JobWatch | None = None
    #: the limit it exceeded, in words: it is being ended for it
    over_limit: str | None = None
    #: the pool is to fork this job's replacement once the job has sent its first result
    refill_due: bool = False


def ended_body(job: Job, status: int | None, cpu_limit_reached: bool) -> bytes:
    """The final frame's body of a job whose process exited with ``status`` (``os.wait4``;
    None: reaped already): the worker's word when it ended the job, else the job's own final
    frame, else what the exit status says."""
    if job.killed_for is JobStatus.TIMEOUT:
        return status_body(JobStatus.TIMEOUT, error=f"timed out after {job.timeout:g} s")
    if job.killed_for is JobStatus.CANCELLED:
        return status_body(JobStatus.CANCELLED, error="cancelled")
    if job.over_limit is not None:
        return status_body(JobStatus.LIMIT, error=job.over_limit)
    if job.frames.final is not None:
        return job.frames.final
    if status is not None and os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        name = _signal_name(signum)
        if signum == signal.SIGKILL and cpu_limit_reached:
            # PID 1 of a namespace ignores SIGXCPU: the hard limit a second later ended it
            signum, name = signal.SIGXCPU, "SIGXCPU"
        if signum == getattr(signal, "SIGXCPU", None):
            return status_body(JobStatus.TIMEOUT, error=f"CPU time limit exceeded ({name})")
        if signum == signal.SIGKILL and _oom_grew(job.oom_kills):
            return status_body(JobStatus.MEMORY, error=f"killed by the OOM killer ({name})")
        return status_body(JobStatus.CRASHED, error=f"killed by signal {name}")
    if status is not None and os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        return status_body(JobStatus.CRASHED, error=f"exited with code {code}")
    return status_body(JobStatus.CRASHED, error="the job process vanished")


# ---------------------------------------------------------------- pipes
def read_some(fd: int) -> bytes | None:
    """Bytes available on a non-blocking fd; b"" at EOF, None when nothing is ready."""
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def drain(fd: int) -> bytes:
    """Whatever is left in a non-blocking pipe (a job's subprocess may still hold it open)."""
    chunks = []
    while True:
        data = read_some(fd)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def has_exited(pid: int) -> bool:
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# ---------------------------------------------------------------- OOM kills
def oom_kill_count() -> int | None:
    """The cgroup's OOM-kill counter (v2 ``memory.events`` or v1 ``memory.oom_control``)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            candidate = f"/sys/fs/cgroup{path}/memory.events"
        elif "memory" in controllers.split(","):
            candidate = f"/sys/fs/cgroup/memory{path}/memory.oom_control"
        else:
            continue
        count = _read_oom_kill(candidate)
        if count is not None:
            return count
    return None


def _read_oom_kill(path: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


def _oom_grew(before: int | None) -> bool:
    after = oom_kill_count()
    return before is not None and after is not None and after > before
