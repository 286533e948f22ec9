"""The warm worker: one process that imports heavy modules once and forks a child per job.

It never runs user code itself. Job processes are made *ahead* of jobs (the "idle" ones, one
per job that may run at once, kept by ``pool.JobProcesses`` with the zygotes that fork
them) so that no job waits for a fork; a job is handed to one through a pipe. While it
runs, its processes are sampled against its limits (``limits``). A job's result frames are
read with a bound (``protocol.JOB_FRAME_LIMIT``) and forwarded to the client as bytes after
an envelope of the worker's (``protocol.attach``); a flood of partial results is coalesced.
Requests arrive decoded once (``request_reader``) and go through one dispatch table
(``Worker.handlers``), each to a handler taking its record. The loop is single-threaded
(``selectors``): each registered fd carries the callback that reads it; forking from a
threaded process is unsafe.
"""

from __future__ import annotations

import functools
import gc
import os
import selectors
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from fxls.worker import sandbox
from fxls.worker.child import DUMP_SIGNAL, ChildFds, Limits, run_warm_up
from fxls.worker.child import serve_job as serve_in_job_process
from fxls.worker.hugepages import collapse_anonymous_memory
from fxls.worker.import_origin import add_roots
from fxls.worker.library_learner import LibraryLearner
from fxls.worker.limits import JobWatch
from fxls.worker.messages import (
    Busy,
    CancelRequest,
    Partial,
    PingRequest,
    Pong,
    Ready,
    Refused,
    Result,
    RunRequest,
    ShutdownRequest,
    Started,
    WarmRequest,
    message_of,
)
from fxls.worker.pool import CORES, Child, JobProcesses, kill_child, killpg, reap
from fxls.worker.protocol import (
    FORWARDED_PARTIALS,
    IMPORTS,
    JOB_FRAME_LIMIT,
    PARTIAL,
    WARMTH,
    WARMTH_BYTES,
    JobStatus,
    JsonValue,
    Op,
    Oversized,
    attach,
    decode,
    encode,
    peek_status,
    status_body,
    write_all,
)
from fxls.worker.request_reader import RequestReader
from fxls.worker.running_job import (
    Job,
    drain,
    ended_body,
    has_exited,
    oom_kill_count,
    read_some,
)
from fxls.worker.where import BODY_LIMIT as WHERE_LIMIT
from fxls.worker.where import WHERE, read_where
from fxls.worker.worker_imports import ImportsToLearn, learnable, warm_imports
from fxls.worker.zygote import News, Preload

#: time a timed-out job gets to print its stack before it is killed
_DUMP_GRACE_S = 0.3
PARENT_POLL_S = 0.5


class Worker:
    def __init__(
        self, channel_in: int, channel_out: int, limits: Limits, warm_up: str | None = None,
        learn_imports: tuple[str, ...] = (), learn_libraries: bool = False,
        warm_from: str | None = None,
    ) -> None:
        self.channel_in = channel_in
        self.channel_out = channel_out
        self.limits = limits
        self.warm_up = warm_up
        self.warm_from = warm_from if warm_up else None  # only a process warming up waits
        self.learn_libraries = learn_libraries
        #: modules jobs imported that the worker imports too, after the job that needed them
        self.own_imports = ImportsToLearn(learn_imports)
        self.parent_pid = os.getppid()
        self.selector = selectors.DefaultSelector()
        self.requests = RequestReader(_log)
        #: one handler per request (``messages.Request``): the record, and what is attached
        self.handlers: dict[Op, Callable[..., None]] = {
            Op.RUN: self._start_job, Op.CANCEL: self._cancel_job, Op.WARM: self._warm,
            Op.PING: self._pong, Op.SHUTDOWN: self._stop,
        }
        self.jobs: dict[int, Job] = {}
        self.running = True
        #: the job processes made ahead of jobs, and the zygotes that make them
        self.pool = JobProcesses(self.selector, self)
        #: the third-party libraries the zygotes import for the jobs
        self.learner = LibraryLearner(self.pool, _log)

    # ------------------------------------------- what the pool asks of its worker
    def worker_fds(self) -> list[int]:
        return [self.channel_in, self.channel_out]

    def running_jobs(self) -> list[Child]:
        return [job.child for job in self.jobs.values()]

    def wanted(self) -> bool:
        return self.running

    def zygote_news(self, news: News, libraries: frozenset[str]) -> Preload:
        return self.learner.zygote_news(news, libraries)

    def serve_job(self, worker_pid: int, job_r: int, result_w: int, out_w: int,
                  close: list[int], job_dir: str) -> NoReturn:
        """In a new job process (forked by the worker or its zygote): serve one job."""
        serve_in_job_process(ChildFds(job_r, result_w, out_w), self.limits, worker_pid, close,
                             self.warm_up, self.own_imports.packages, job_dir,
                             self.warm_from)

    # ---------------------------------------------------------------- loop
    def serve(self, ready: Ready, prime: str | None = None) -> None:
        """Run ``prime`` (a warm-up, ``fxls.worker.api``) once here, fork the idle children,
        tell the client ``ready``, then serve until told to stop."""
        self.selector.register(self.channel_in, selectors.EVENT_READ, self._read_channel)
        try:
            if prime:
                run_warm_up(prime)
            collapse_anonymous_memory()  # cheaper forks
            zygote = self.pool.start()  # the first jobs find their processes ready
            # libraries go into zygotes only: the worker never runs their code
            self.learner.enabled = self.learn_libraries and zygote is not None
            self.send(message_of(replace(ready, zygote=zygote)))
            while self.running:
                for key, _ in self.selector.select(self._select_timeout()):
                    key.data()
                self._check_deadlines()
                self._check_limits()
                self._poll_exits()
                if self.own_imports.wanted:
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

    # ------------------------------------------------------------- channel
    def _read_channel(self) -> None:
        try:
            data = os.read(self.channel_in, 1 << 20)
        except OSError:
            data = b""
        if not data:  # the client is gone
            self.running = False
            return
        for item in self.requests.take(data):
            if isinstance(item, Refused):
                self.send(message_of(item))
            else:
                request, attached = item
                self.handlers[request.op](request, attached)

    def _cancel_job(self, request: CancelRequest, attached: bytes) -> None:
        job = self.jobs.get(request.id)
        if job is not None:
            self._kill(job, JobStatus.CANCELLED)

    def _warm(self, request: WarmRequest, attached: bytes) -> None:
        """Libraries the client expects jobs to import (a workspace's imports): tried and
        learned in the background, as if a job had imported them; ``roots``: the workspace
        folders (nothing is learned from inside them)."""
        add_roots(request.roots)
        self.learner.note_roots(request.roots)
        self.learner.offer(list(request.modules))

    def _pong(self, request: PingRequest, attached: bytes) -> None:
        self.send(message_of(Pong()))

    def _stop(self, request: ShutdownRequest, attached: bytes) -> None:
        self.running = False

    def send(self, message: dict[str, JsonValue] | bytes) -> None:
        """Send a message, or a frame already encoded."""
        try:
            write_all(self.channel_out, message if isinstance(message, bytes) else encode(message))
        except OSError:  # the client is gone
            self.running = False

    # ---------------------------------------------------------------- jobs
    def _start_job(self, request: RunRequest, attached: bytes) -> None:
        """Hand the job (``attached``: its request and params, undecoded) to a job process
        that fits its policy."""
        refuse = self.learner.refuse_for(request.sources, request.policy.write)
        child = self.pool.hand_over(attached, request.policy, refuse)
        if child is None:
            self.send(attach(_envelope(Result(request.id, JobStatus.CRASHED, False, "", 0.0)),
                             status_body(JobStatus.CRASHED, error="could not start a job process")))
            return
        now = time.monotonic()
        job = Job(
            id=request.id,
            child=child,
            started=now,
            deadline=now + request.timeout if request.timeout else None,
            timeout=request.timeout,
            oom_kills=oom_kill_count(),
            watch=self._watch(child, request),
        )
        self.jobs[request.id] = job
        self._register(child.out_r, functools.partial(self._read_output, job))
        self._register(child.result_r, functools.partial(self._read_result, job))
        if child.pidfd is not None:
            self._register(child.pidfd, functools.partial(self._finish, job))
        self.send(message_of(Started(request.id)))
        self.pool.jobs_running(len(self.jobs))
        # the next job's process: its fork is quick, but its warm-up (an analysis) would take
        # a core from this job: forked once the job ends (without a warm-up, at its first
        # result); at once if none is left
        if self.pool.idle:
            job.refill_due = True
        else:
            self.pool.ensure_idle()

    def _register(self, fd: int, on_readable: Callable[[], None]) -> None:
        self.selector.register(fd, selectors.EVENT_READ, on_readable)

    def _watch(self, child: Child, request: RunRequest) -> JobWatch | None:
        """The job's limits, sampled by the worker (``limits``): the policy's, else the
        worker's memory limit."""
        policy = request.policy
        if policy.memory_mb is None and self.limits.memory_mb:
            policy = replace(policy, memory_mb=self.limits.memory_mb)
        if not (policy.memory_mb or policy.max_processes or policy.tmp_mb):
            return None
        return JobWatch(child.pid, policy, sandbox.job_folder(child.job_dir))

    def _read_output(self, job: Job) -> None:
        data = read_some(job.child.out_r)
        if data:
            job.output.append(data)
        elif data is not None:
            self._unregister(job.child.out_r)

    def _read_result(self, job: Job) -> None:
        data = read_some(job.child.result_r)
        if data:
            self._take_frames(job, data)
        elif data is not None:
            self._unregister(job.child.result_r)

    def _take_frames(self, job: Job, data: bytes) -> None:
        """Forward partial results as they come, as bytes (past ``FORWARDED_PARTIALS``, only
        the newest, right before the final one); report the final one at once (the teardown
        of a large child takes milliseconds that the caller need not wait for). A frame over
        the limit ends the job without being read."""
        frames = job.frames
        for body in frames.buffer.bodies(data):
            if frames.final is not None:
                continue
            if isinstance(body, Oversized):
                frames.final = status_body(
                    JobStatus.INVALID, error=f"the job sent a result frame of {body.size:,} "
                    f"bytes; the limit is {JOB_FRAME_LIMIT:,} bytes")
                self._kill(job, JobStatus.INVALID)
                continue
            status = peek_status(body)
            if status is None:
                continue  # not our framing: the exit status will tell what happened
            if status == PARTIAL:
                self._take_partial(job, body)
            elif status == WHERE:
                frames.where = body if len(body) <= WHERE_LIMIT else None
            elif status == WARMTH:
                job.frames.warmth = body if len(body) <= WARMTH_BYTES else None
            elif status == IMPORTS:  # comes right before the final frame
                names = _names(body)
                if isinstance(names, dict):
                    frames.imports = learnable(names.get("modules"), self.own_imports.packages)
                    frames.libraries = names.get("libraries")
            else:
                self._take_final(job, body)

    def _take_partial(self, job: Job, body: bytes) -> None:
        if job.killed_for is None and job.frames.partials < FORWARDED_PARTIALS:
            job.frames.partials += 1
            self.send(attach(message_of(Partial(job.id)), body))
        else:
            job.frames.held_partial = body
        if not self.warm_up:  # a warm-up would take a core from what the job does next
            self._refill(job)

    def _take_final(self, job: Job, body: bytes) -> None:
        job.frames.final, job.frames.final_from_job = body, True
        self.own_imports.note(job.frames.imports)
        if job.frames.warmth is not None and self.warm_from:
            self.pool.warmth.remember(job.frames.warmth)
        if job.killed_for is None and job.over_limit is None and not job.reported:
            tail = drain(job.child.out_r)
            if tail:
                job.output.append(tail)
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
                    or job.frames.final is not None or not watch.due(now)):
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
            if job.child.pidfd is None and has_exited(job.child.pid):
                self._finish(job)

    def _kill(self, job: Job, reason: JobStatus) -> None:
        job.killed_for = reason
        kill_child(job.child.pid)

    def _finish(self, job: Job) -> None:
        """The child exited: collect what it left, report, release its resources."""
        child = job.child
        killpg(child.pid)  # leftovers of the job (its own subprocesses)
        status, cpu_used = reap(child.pid)
        left = drain(child.result_r)
        if left:
            self._take_frames(job, left)
        tail = drain(child.out_r)
        if tail:
            job.output.append(tail)
        self.pool.release(child)
        del self.jobs[job.id]
        if not job.reported:
            self._report(job, ended_body(job, status, self._cpu_limit_reached(cpu_used)))
        self.pool.job_ended()
        self.pool.jobs_running(len(self.jobs))
        self._refill(job)
        self.pool.share_warmth()
        self.learner.after_job()
        if job.frames.final_from_job and job.frames.libraries is not None:
            self.learner.offer(job.frames.libraries)

    def _refill(self, job: Job) -> None:
        """Fork the idle process that replaces ``job``'s, if that was left for later."""
        if job.refill_due:
            job.refill_due = False
            self.pool.ensure_idle()

    def _report(self, job: Job, body: bytes) -> None:
        """Send the job's result: ``body`` (``encode_status``) after the worker's envelope,
        and before it the newest partial result held back, if any."""
        held = job.frames.held_partial
        if held is not None and job.killed_for is not JobStatus.CANCELLED:
            self.send(attach(message_of(Partial(job.id)), held))
        job.frames.held_partial = None
        own = body is job.frames.final and job.frames.final_from_job
        where = (read_where(job.frames.where) if job.frames.where is not None and not own
                 else None)
        result = Result(job.id, peek_status(body) or JobStatus.INVALID, own, job.output.text(),
                        (time.monotonic() - job.started) * 1000.0,
                        where or None)  # it did not end on its own: the line it was running
        self.send(attach(_envelope(result), body))

    def _cpu_limit_reached(self, cpu_used: float) -> bool:
        limit = self.limits.cpu_s
        return bool(limit) and cpu_used >= int(limit + 0.999)  # type: ignore[operator]

    def _learn_imports(self) -> None:
        """Import what jobs imported of ``learn_imports`` (library code, never the user's),
        then replace the idle child so that the next job starts with it loaded. Done after the
        job's result went out; it may take seconds, during which running jobs go on (their
        output waits in its pipe)."""
        names = self.own_imports.next_round()
        if not names:
            return
        self.send(message_of(Busy()))  # the loop blocks for seconds: the heartbeat waits
        warm_imports(names)
        gc.collect()
        gc.freeze()
        collapse_anonymous_memory()
        self.pool.renew()  # new zygotes and idle processes, with the modules

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
def _envelope(result: Result) -> dict[str, JsonValue]:
    """``result``'s message, with ``where`` only for a job that did not end on its own."""
    message = message_of(result)
    if result.where is None:
        del message["where"]
    return message


def _names(body: bytes) -> object:
    """The ``value`` of an ``imports`` frame (untrusted: ``learnable`` checks it)."""
    try:
        value = decode(body)
    except (ValueError, RecursionError):
        return None
    return value.get("value") if isinstance(value, dict) else None


def _log(line: str) -> None:
    """One line on the worker's stderr (the caller's log), never a traceback."""
    try:
        sys.stderr.write(f"fxls worker: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
