"""The warm worker: one process that imports heavy modules once and forks a child per job.

It never runs user code itself. Job processes are made *ahead* of jobs (the "idle" ones, one
per job that may run at once, kept by ``pool.JobProcesses`` with the zygotes that fork
them) so that no job waits for a fork; a job is handed to one through a pipe. While it
runs, its processes are sampled against its limits (``limits``). A job's result frames are
read with a bound (``protocol.JOB_FRAME_LIMIT``) and forwarded to the client as bytes after
an envelope of the worker's (``protocol.attach``); a flood of partial results is coalesced.
Requests go through one dispatch table (``Worker.handlers``). The loop is single-threaded
(``selectors``): forking from a threaded process is unsafe.
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from fxls.worker import sandbox
from fxls.worker.child import (
    DUMP_SIGNAL,
    ChildFds,
    Limits,
    run_warm_up,
    serve_job,
)
from fxls.worker.hugepages import collapse_anonymous_memory
from fxls.worker.import_origin import add_roots
from fxls.worker.library_learner import LibraryLearner
from fxls.worker.limits import JobWatch
from fxls.worker.policy import JobPolicy
from fxls.worker.pool import (
    CORES,
    Child,
    JobProcesses,
    kill_child,
    killpg,
    reap,
)
from fxls.worker.protocol import (
    FORWARDED_PARTIALS,
    IMPORTS,
    JOB_FRAME_LIMIT,
    PARTIAL,
    REQUEST_LIMIT,
    REQUESTS,
    FrameBuffer,
    JobStatus,
    Op,
    Oversized,
    ProtocolError,
    attach,
    check_message,
    decode,
    encode,
    peek_status,
    status_body,
    write_all,
)
from fxls.worker.where import BODY_LIMIT as WHERE_LIMIT
from fxls.worker.where import WHERE, read_where
from fxls.worker.worker_imports import LIFETIME_LIMIT, import_plan, learnable, warm_imports

#: time a timed-out job gets to print its stack before it is killed
_DUMP_GRACE_S = 0.3
OUTPUT_TAIL = 64 * 1024
PARENT_POLL_S = 0.5
_READ_CHUNK = 1 << 16
_TRUNCATED = "[... earlier output truncated ...]\n"


@dataclass
class Job:
    id: Any
    child: Child
    started: float
    deadline: float | None
    timeout: float | None
    #: the result frames (``partial`` ones, then the final one) as they arrive, bounded
    frames: FrameBuffer = field(default_factory=lambda: FrameBuffer(JOB_FRAME_LIMIT))
    #: partial frames forwarded so far; past ``FORWARDED_PARTIALS`` only the newest is kept
    partials: int = 0
    held_partial: bytes | None = None
    #: the body of the final frame (``protocol.encode_status``), once it arrived
    final: bytes | None = None
    #: ``final`` is the job's own frame (untrusted), not one the worker made
    final_from_job: bool = False
    output: bytearray = field(default_factory=bytearray)
    output_total: int = 0
    killed_for: JobStatus | None = None
    oom_kills: int | None = None
    #: the job was asked to print where it is running (it is about to time out)
    dumped: bool = False
    #: its result went to the client already (sent at the result's EOF, before the exit)
    reported: bool = False
    #: modules the job imported that the worker may learn (see ``Worker._learn_imports``)
    imports: list[str] = field(default_factory=list)
    #: every module the job imported (untrusted): its libraries may be learned
    libraries: Any = None
    #: samples its processes against its limits (None: no limits to watch)
    watch: JobWatch | None = None
    #: the limit it exceeded, in words: it is being ended for it
    over_limit: str | None = None
    #: the pool is to fork this job's replacement once the job has sent its first result
    refill_due: bool = False
    #: the last frame of its watchdog (``where``; untrusted): decoded only if the job is
    #: ended, so a flood of them costs the worker no decoding
    where: bytes | None = None


class Worker:
    def __init__(
        self, channel_in: int, channel_out: int, limits: Limits, warm_up: str | None = None,
        learn_imports: tuple[str, ...] = (), learn_libraries: bool = False,
    ) -> None:
        self.channel_in = channel_in
        self.learn_libraries = learn_libraries
        self.learn_imports = learn_imports
        #: modules jobs imported that the worker imports too, after the job that needed them
        self.to_learn: set[str] = set()
        self.channel_out = channel_out
        self.limits = limits
        self.warm_up = warm_up
        self.parent_pid = os.getppid()
        self.selector = selectors.DefaultSelector()
        self.frames = FrameBuffer(REQUEST_LIMIT)
        #: one handler per request (``protocol.REQUESTS``)
        self.handlers: dict[Op, Callable[[dict[str, Any]], None]] = {
            Op.RUN: self._start_job, Op.CANCEL: self._cancel_job, Op.WARM: self._warm,
            Op.PING: lambda _: self.send({"op": Op.PONG}), Op.SHUTDOWN: self._stop,
        }
        #: modules learned from jobs so far (``learning.LIFETIME_LIMIT``)
        self.learned = 0
        self.jobs: dict[Any, Job] = {}
        self.running = True
        #: the job processes made ahead of jobs, and the zygotes that make them
        self.pool = JobProcesses(
            self.selector, self._serve_job,
            worker_fds=lambda: [self.channel_in, self.channel_out],
            running_jobs=lambda: [job.child for job in self.jobs.values()],
            wanted=lambda: self.running,
            news=lambda news, libraries: self.learner.zygote_news(news, libraries))
        #: the third-party libraries the zygotes import for the jobs
        self.learner = LibraryLearner(self.pool, _log)

    # ---------------------------------------------------------------- loop
    def serve(self, ready: dict[str, Any], prime: str | None = None) -> None:
        """Run ``prime`` (a warm-up, ``fxls.worker.api``) once here, fork the idle children,
        tell the client ``ready``, then serve until told to stop."""
        self.selector.register(self.channel_in, selectors.EVENT_READ, ("channel", None))
        try:
            if prime:
                run_warm_up(prime)
            collapse_anonymous_memory()  # cheaper forks
            zygote = self.pool.start()  # the first jobs find their processes ready
            # libraries go into zygotes only: the worker never runs their code
            self.learner.enabled = self.learn_libraries and zygote is not None
            self.send({**ready, "zygote": zygote})
            while self.running:
                for key, _ in self.selector.select(self._select_timeout()):
                    self._dispatch_event(*key.data)
                self._check_deadlines()
                self._check_limits()
                self._poll_exits()
                if self.to_learn:
                    self._learn_imports()
                self.learner.tick(cores_busy=len(self.jobs) >= CORES)
                if os.getppid() != self.parent_pid:
                    break
        finally:
            self.shutdown()

    def _select_timeout(self) -> float:
        timeout = PARENT_POLL_S
        if any(job.child.pidfd is None for job in self.jobs.values()):
            timeout = 0.02  # no pidfd: exits are noticed by polling
        learn_in = self.learner.due_in()
        if learn_in is not None and len(self.jobs) < CORES:
            timeout = min(timeout, learn_in + 0.01)
        now = time.monotonic()
        for job in self.jobs.values():
            if job.deadline is not None and job.killed_for is None:
                timeout = min(timeout, max(0.0, job.deadline - now))
            if job.watch is not None and job.over_limit is None and job.killed_for is None:
                timeout = min(timeout, max(0.0, job.watch.next_sample - now))
        return timeout

    def _dispatch_event(self, kind: str, obj: Any) -> None:
        if kind == "channel":
            self._read_channel()
        elif kind == "out":
            self._read_output(obj)
        elif kind == "result":
            self._read_result(obj)
        elif kind == "exit":
            self._finish(obj)
        elif kind == "idle-exit":
            self.pool.idle_died(obj)
        elif kind == "zygote":
            self.pool.take_announcements(obj)

    # ------------------------------------------------------------- channel
    def _read_channel(self) -> None:
        try:
            data = os.read(self.channel_in, 1 << 20)
        except OSError:
            data = b""
        if not data:  # the client is gone
            self.running = False
            return
        for body in self.frames.bodies(data):
            if isinstance(body, Oversized):
                _log(f"ignored a request of {body.size} bytes (limit {REQUEST_LIMIT})")
                continue
            try:
                message = decode(body)
            except (ValueError, RecursionError) as error:
                _log(f"ignored a request that is not JSON ({error})")
                continue
            self._handle(message)

    def _handle(self, message: Any) -> None:
        """Dispatch a request; one that does not fit the protocol is answered with an error
        at once (its sender is not left waiting for a timeout)."""
        try:
            op = check_message(message, REQUESTS)
        except ProtocolError as error:
            _log(f"refused a request: {error}")
            request_id = message.get("id") if isinstance(message, dict) else None
            self.send({"op": Op.ERROR, "id": request_id if isinstance(request_id, int) else None,
                       "error": str(error)})
            return
        self.handlers[op](message)

    def _cancel_job(self, message: dict[str, Any]) -> None:
        job = self.jobs.get(message["id"])
        if job is not None:
            self._kill(job, JobStatus.CANCELLED)

    def _warm(self, message: dict[str, Any]) -> None:
        """Libraries the client expects jobs to import (a workspace's imports): tried and
        learned in the background, as if a job had imported them; ``roots``: the workspace
        folders (nothing is learned from inside them)."""
        add_roots(message.get("roots"))
        self.learner.note_roots(message.get("roots"))
        self.learner.offer(message["modules"])

    def _stop(self, message: dict[str, Any]) -> None:
        self.running = False

    def send(self, message: dict[str, Any] | bytes) -> None:
        """Send a message, or a frame already encoded."""
        try:
            write_all(self.channel_out, message if isinstance(message, bytes) else encode(message))
        except OSError:  # the client is gone
            self.running = False

    # ---------------------------------------------------------------- jobs
    def _start_job(self, message: dict[str, Any]) -> None:
        job_id = message.get("id")
        policy = JobPolicy.from_dict(message.get("policy"))
        payload = json.dumps({"target": message["target"], "params": message.get("params"),
                              "policy": policy.to_dict()})
        refuse = self.learner.refuse_for(message.get("sources"), policy.write)
        child = self.pool.hand_over(payload.encode("utf-8"), policy.network, refuse)
        if child is None:
            self.send(attach({"op": Op.RESULT, "id": job_id, "status": JobStatus.CRASHED,
                              "own": False, "output": "", "duration_ms": 0.0},
                             status_body(JobStatus.CRASHED, error="could not start a job process")))
            return
        timeout = message.get("timeout")
        now = time.monotonic()
        job = Job(
            id=job_id,
            child=child,
            started=now,
            deadline=now + timeout if timeout else None,
            timeout=timeout,
            oom_kills=oom_kill_count(),
            watch=self._watch(child, policy),
        )
        self.jobs[job_id] = job
        self.selector.register(child.out_r, selectors.EVENT_READ, ("out", job))
        self.selector.register(child.result_r, selectors.EVENT_READ, ("result", job))
        if child.pidfd is not None:
            self.selector.register(child.pidfd, selectors.EVENT_READ, ("exit", job))
        self.send({"op": Op.STARTED, "id": job_id})
        self.pool.jobs_running(len(self.jobs))
        # the next job's process: its fork is quick, but its warm-up (an analysis) would take
        # a core from this job until its first result; forked at once if none is left
        if self.pool.idle:
            job.refill_due = True
        else:
            self.pool.ensure_idle()

    def _watch(self, child: Child, policy: JobPolicy) -> JobWatch | None:
        """The job's limits, sampled by the worker (``limits``): the policy's, else the
        worker's memory limit."""
        if policy.memory_mb is None and self.limits.memory_mb:
            policy = replace(policy, memory_mb=self.limits.memory_mb)
        if not (policy.memory_mb or policy.max_processes or policy.tmp_mb):
            return None
        return JobWatch(child.pid, policy, sandbox.job_folder(child.job_dir))

    def _read_output(self, job: Job) -> None:
        data = _read_some(job.child.out_r)
        if data:
            _append_tail(job, data)
        elif data is not None:
            self._unregister(job.child.out_r)

    def _read_result(self, job: Job) -> None:
        data = _read_some(job.child.result_r)
        if data:
            self._take_frames(job, data)
        elif data is not None:
            self._unregister(job.child.result_r)

    def _take_frames(self, job: Job, data: bytes) -> None:
        """Forward partial results as they come, as bytes (past ``FORWARDED_PARTIALS``, only
        the newest, right before the final one); report the final one at once (the teardown
        of a large child takes milliseconds that the caller need not wait for). A frame over
        the limit ends the job without being read."""
        for body in job.frames.bodies(data):
            if job.final is not None:
                continue
            if isinstance(body, Oversized):
                job.final = status_body(
                    JobStatus.INVALID, error=f"the job sent a result frame of {body.size:,} "
                    f"bytes; the limit is {JOB_FRAME_LIMIT:,} bytes")
                self._kill(job, JobStatus.INVALID)
                continue
            status = peek_status(body)
            if status is None:
                continue  # not our framing: the exit status will tell what happened
            if status == PARTIAL:
                if job.killed_for is None and job.partials < FORWARDED_PARTIALS:
                    job.partials += 1
                    self.send(attach({"op": Op.PARTIAL, "id": job.id}, body))
                else:
                    job.held_partial = body
                self._refill(job)
                continue
            if status == WHERE:
                job.where = body if len(body) <= WHERE_LIMIT else None
                continue
            if status == IMPORTS:  # comes right before the final frame
                names = _names(body)
                if isinstance(names, dict):
                    job.imports = learnable(names.get("modules"), self.learn_imports)
                    job.libraries = names.get("libraries")
                continue
            job.final, job.final_from_job = body, True
            self.to_learn.update(job.imports)
            if job.killed_for is None and job.over_limit is None and not job.reported:
                tail = _drain(job.child.out_r)
                if tail:
                    _append_tail(job, tail)
                job.reported = True
                self._report(job, body)

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.deadline is not None and job.killed_for is None and now >= job.deadline:
                if not job.dumped:
                    self._ask_where(job, now)
                    continue
                self._kill(job, JobStatus.LIMIT if job.over_limit else JobStatus.TIMEOUT)

    def _check_limits(self) -> None:
        """Sample the running jobs' processes; a job over a limit is asked where it is
        running, then ended (``_check_deadlines``)."""
        for job in self.jobs.values():
            now = time.monotonic()
            watch = job.watch
            if (watch is None or job.over_limit is not None or job.killed_for is not None
                    or job.final is not None or not watch.due(now)):
                continue
            job.over_limit = watch.check(now)
            if job.over_limit is not None:
                watch.pause_others()
                self._ask_where(job, time.monotonic())  # a sample may take a while

    def _ask_where(self, job: Job, now: float) -> None:
        """Ask the job for its stack (it is about to be ended); it gets a moment to print."""
        job.dumped = True
        job.deadline = now + _DUMP_GRACE_S
        try:
            os.kill(job.child.pid, DUMP_SIGNAL)
        except OSError:
            pass

    def _poll_exits(self) -> None:
        for job in list(self.jobs.values()):
            if job.child.pidfd is None and _has_exited(job.child.pid):
                self._finish(job)

    def _kill(self, job: Job, reason: JobStatus) -> None:
        job.killed_for = reason
        kill_child(job.child.pid)

    def _finish(self, job: Job) -> None:
        """The child exited: collect what it left, report, release its resources."""
        child = job.child
        killpg(child.pid)  # leftovers of the job (its own subprocesses)
        status, cpu_used = reap(child.pid)
        left = _drain(child.result_r)
        if left:
            self._take_frames(job, left)
        tail = _drain(child.out_r)
        if tail:
            _append_tail(job, tail)
        self.pool.release(child)
        del self.jobs[job.id]
        if not job.reported:
            self._report(job, self._outcome(job, status, cpu_used))
        self.pool.job_ended()
        self.pool.jobs_running(len(self.jobs))
        self._refill(job)
        self.learner.after_job()
        if job.final_from_job and job.libraries is not None:
            self.learner.offer(job.libraries)

    def _refill(self, job: Job) -> None:
        """Fork the idle process that replaces ``job``'s, if that was left for later."""
        if job.refill_due:
            job.refill_due = False
            self.pool.ensure_idle()

    def _report(self, job: Job, body: bytes) -> None:
        """Send the job's result: ``body`` (``encode_status``) after the worker's envelope,
        and before it the newest partial result held back, if any."""
        if job.held_partial is not None and job.killed_for is not JobStatus.CANCELLED:
            self.send(attach({"op": Op.PARTIAL, "id": job.id}, job.held_partial))
        job.held_partial = None
        own = body is job.final and job.final_from_job
        envelope = {
            "op": Op.RESULT, "id": job.id, "status": peek_status(body) or JobStatus.INVALID,
            "own": own, "output": _output_text(job),
            "duration_ms": (time.monotonic() - job.started) * 1000.0,
        }
        where = read_where(job.where) if job.where is not None and not own else None
        if where:  # it did not end on its own: the line it was running
            envelope["where"] = where
        self.send(attach(envelope, body))

    def _outcome(self, job: Job, status: int | None, cpu_used: float = 0.0) -> bytes:
        if job.killed_for is JobStatus.TIMEOUT:
            return status_body(JobStatus.TIMEOUT, error=f"timed out after {job.timeout:g} s")
        if job.killed_for is JobStatus.CANCELLED:
            return status_body(JobStatus.CANCELLED, error="cancelled")
        if job.over_limit is not None:
            return status_body(JobStatus.LIMIT, error=job.over_limit)
        if job.final is not None:
            return job.final
        if status is not None and os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            name = _signal_name(signum)
            if signum == signal.SIGKILL and self._cpu_limit_reached(cpu_used):
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

    def _cpu_limit_reached(self, cpu_used: float) -> bool:
        limit = self.limits.cpu_s
        return bool(limit) and cpu_used >= int(limit + 0.999)  # type: ignore[operator]

    def _learn_imports(self) -> None:
        """Import what jobs imported of ``learn_imports`` (library code, never the user's),
        then replace the idle child so that the next job starts with it loaded. Done after the
        job's result went out; it may take seconds, during which running jobs go on (their
        output waits in its pipe)."""
        names = import_plan(self.to_learn, LIFETIME_LIMIT - self.learned)
        self.to_learn.clear()
        if not names:
            return
        self.learned += len(names)
        self.send({"op": Op.BUSY})  # the loop blocks for seconds: the client's heartbeat waits
        warm_imports(names)
        gc.collect()
        gc.freeze()
        collapse_anonymous_memory()
        self.pool.renew()  # new zygotes and idle processes, with the modules

    def _serve_job(self, worker_pid: int, job_r: int, result_w: int, out_w: int,
                   close: list[int], job_dir: str) -> NoReturn:
        """In a new job process (forked by the worker or its zygote): serve one job."""
        serve_job(ChildFds(job_r, result_w, out_w), self.limits, worker_pid, close,
                  self.warm_up, self.learn_imports, job_dir)

    def _unregister(self, fd: int) -> None:
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError):
            pass

    def shutdown(self) -> None:
        """Kill every child (they must not outlive the worker) and release everything."""
        self.running = False
        self.pool.close()
        for job in list(self.jobs.values()):
            kill_child(job.child.pid)
            reap(job.child.pid)
            self.pool.release(job.child)
        self.jobs.clear()
        sandbox.end_adopted(())
        sandbox.remove_jobs_dir()


# ---------------------------------------------------------------- helpers
def _names(body: bytes) -> Any:
    """The ``value`` of an ``imports`` frame (untrusted: ``learning.learnable`` checks it)."""
    try:
        return decode(body).get("value")
    except (ValueError, AttributeError, RecursionError):
        return None


def _log(line: str) -> None:
    """One line on the worker's stderr (the caller's log), never a traceback."""
    try:
        sys.stderr.write(f"fxls worker: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _append_tail(job: Job, data: bytes) -> None:
    job.output += data
    job.output_total += len(data)
    if len(job.output) > 2 * OUTPUT_TAIL:
        del job.output[: len(job.output) - OUTPUT_TAIL]


def _output_text(job: Job) -> str:
    text = bytes(job.output[-OUTPUT_TAIL:]).decode("utf-8", errors="replace")
    return _TRUNCATED + text if job.output_total > OUTPUT_TAIL else text


def _read_some(fd: int) -> bytes | None:
    """Bytes available on a non-blocking fd; b"" at EOF, None when nothing is ready."""
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _drain(fd: int) -> bytes:
    """Whatever is left in a non-blocking pipe (a job's subprocess may still hold it open)."""
    chunks = []
    while True:
        data = _read_some(fd)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def _has_exited(pid: int) -> bool:
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
