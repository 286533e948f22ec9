"""The worker's job processes made ahead of jobs (the *idle* ones) and the zygotes that make
them (``zygote``).

A job is handed to the oldest idle job process of its network policy (``hand_over``), so
that no job waits for a fork; the pool keeps ``IDLE_CHILDREN`` of them ready (the worker
asks for a job's replacement once that job has sent its first result, unless no idle one is
left: a new process warms up by running an analysis, which would take a core from the job
on two). They come from
a zygote where one can be used (one for jobs without network; a second one, started when
the first job allowed the network comes, where the first one's network namespace has
none), else the worker forks them itself (``sandbox.fork_job_process``). The pool shares
the worker's selector: an idle process's pidfd is registered with the callback
``idle_died``, a zygote's socket with ``take_announcements``. What it needs of the worker is
its ``PoolOwner`` side. Everything here runs on the worker's single thread.

Learned libraries (``set_libraries``) are imported by a new zygote, which replaces the old
one once it says it is ready; until then jobs go on with the old zygote's processes, and
while one runs the new zygote is paused (``pause_coming``: its imports take seconds of CPU
that a save's job should have). Each job
process carries the libraries it has loaded (``Child.preloaded``): a job that must run
without some of them (``hand_over(refuse=...)``) gets a process that has none of them, forked
by the worker itself if no idle one fits.
"""

from __future__ import annotations

import functools
import os
import selectors
import signal
import time
from dataclasses import dataclass, field
from typing import NoReturn, Protocol

from fxls.worker import sandbox
from fxls.worker.child import flush_output
from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import write_all
from fxls.worker.warmth_relay import WarmthRelay
from fxls.worker.zygote import Announcement, ForkFailed, News, Preload, Zygote

#: idle children kept forked: two jobs at once (``fxls check`` on two cores) never wait
IDLE_CHILDREN = 2
#: a zygote importing libraries is paused while jobs run only this long after its start:
#: under a stream of saves it would never be done
PAUSE_LIMIT_S = 10.0
#: the cores this worker may use: a zygote importing libraries is paused only while the
#: jobs take them all (on two cores, one job and the imports run side by side: the saves
#: that follow get the libraries seconds sooner, at little cost to the running job)
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class Child:
    """A job process and the worker's ends of its pipes."""

    pid: int
    pidfd: int | None
    job_w: int  # -1 once closed (after the hand-over)
    result_r: int
    out_r: int
    #: the name of its private folder in the jobs folder (``sandbox.enter``)
    job_dir: str
    forked_at: float = field(default_factory=time.monotonic)
    #: the libraries its zygote imported (``fxls.worker.library_learner``)
    preloaded: frozenset[str] = frozenset()
    #: the zygote that forked it (its generation; 0: the worker)
    zygote: int = 0
    #: the warmth values it was sent (``warmth_relay``)
    warmth_sent: set[int] = field(default_factory=set)


class PoolOwner(Protocol):
    """What the pool needs of the worker it serves."""

    def serve_job(self, worker_pid: int, job_r: int, result_w: int, out_w: int,
                  close: list[int], job_dir: str) -> NoReturn:
        """Runs in each new job process (``close``: the fds it must close); never returns."""

    def worker_fds(self) -> list[int]:
        """The worker's own fds, which a job process must close."""

    def running_jobs(self) -> list[Child]:
        """The job processes handed a job (the pool's no longer)."""

    def wanted(self) -> bool:
        """False once the worker is stopping."""

    def zygote_news(self, news: News, libraries: frozenset[str]) -> Preload:
        """A preloading zygote's news with the libraries it was asked to import (not ready
        and nothing left out: it ended without a word); for a zygote that is ready, what it
        has imported."""


class JobProcesses:
    """The idle job processes and the zygotes of one worker."""

    def __init__(self, selector: selectors.BaseSelector, owner: PoolOwner) -> None:
        self.selector = selector
        self.owner = owner
        self.idle: list[Child] = []
        #: whether the idle children are made for jobs allowed the network (the last job's)
        self.network = False
        #: forks the job processes where they can (``zygote``), one for jobs without network
        #: (key False) and, once such a job comes, one for jobs allowed it (key True; the
        #: first one's network namespace has none); else the worker forks them
        self.zygotes: dict[bool, Zygote] = {}
        #: zygotes importing a new set of libraries, by key: they replace those above once
        #: ready
        self.coming: dict[bool, Zygote] = {}
        #: the modules new zygotes import (libraries, then their submodules), and the
        #: libraries' names: a job process with another library loaded is never used
        self.preload: Preload = ()
        self.libraries: frozenset[str] = frozenset()
        #: the coming zygotes are stopped (SIGSTOP) while jobs run
        self.coming_paused = False
        self.zygotes_started = 0
        self.zygotes_tried: set[bool] = set()
        self.forks = 0
        #: a job ended: what it left behind is to be killed (``end_strays``)
        self.strays_due = False
        #: the last jobs' warmth values, for the idle process next in line
        self.warmth = WarmthRelay()

    # ------------------------------------------------------------ lifecycle
    def start(self) -> int | None:
        """Start the first zygote and the idle processes (adopted before the first job);
        the zygote's pid, None if the worker forks the job processes itself."""
        self.start_zygote(network=False)
        self.ensure_idle()
        self.settle()
        first = self.zygotes.get(False)
        return first.pid if first is not None else None

    def renew(self) -> None:
        """After the worker imported more modules: new zygotes and idle processes, which
        have them loaded. A zygote still importing the current libraries goes on: started
        again it would take as long once more, and the modules the worker learned are
        mostly the ones those libraries import (``transformers``: ``torch._dynamo``)."""
        self.settle()
        while self.idle:
            self.retire(self.idle[0])
        for network in list(self.zygotes):
            coming = self.coming.get(network)
            if coming is None or coming.preloaded != self.libraries:
                self.start_zygote(network)
        self.ensure_idle()

    def set_libraries(self, preload: Preload) -> None:
        """Import ``preload`` (libraries, each with its submodules) in new zygotes, started
        now; job processes with a library no longer in it are ended at once (it changed on
        disk), and so is a zygote with one."""
        libraries = frozenset(names[0] for names in preload)
        if preload == self.preload:
            return
        self.preload, self.libraries = preload, libraries
        self.settle()
        for child in [c for c in self.idle if not c.preloaded <= libraries]:
            self.retire(child)
        for zygote in [z for z in self.zygotes.values() if not z.preloaded <= libraries]:
            self.stop_zygote(zygote)
        for network in sorted(self.zygotes_tried):
            self.start_zygote(network)
        self.ensure_idle()

    def close(self) -> None:
        """Stop the zygotes and the idle processes (the worker ends the running jobs)."""
        self.settle()
        for zygote in [*self.zygotes.values(), *self.coming.values()]:
            self.stop_zygote(zygote)
        while self.idle:
            self.retire(self.idle[0])

    # ---------------------------------------------------------------- jobs
    def hand_over(self, payload: bytes, policy: JobPolicy,
                  refuse: frozenset[str] = frozenset()) -> Child | None:
        """Give the job ``payload`` to an idle process that fits its ``policy`` (network or
        not) with none of the libraries ``refuse`` loaded (forking one if needed); None if
        that keeps failing."""
        network = policy.network
        if network != self.network:  # a change of setting: processes that fit it
            self.network = network
            while self.idle:
                self.retire(self.idle[0])
        for _ in range(3):
            self.ensure_idle()
            if not self.idle:
                self._wait_for_child()
                self.ensure_idle()  # if the zygote failed, the worker forks one itself
            child = self._usable(refuse)
            if child is not None:
                self.idle.remove(child)
                if child.pidfd is not None:
                    self._unregister(child.pidfd)
            else:  # every idle one has a library this job runs without: a plain one
                child = self._fork() if self.idle else None
            if child is None:
                return None
            try:
                write_all(child.job_w, payload)
                return child
            except OSError:  # the idle child died; reap it and try a fresh one
                self.discard(child)
            finally:
                close_job_w(child)
        return None

    def share_warmth(self) -> None:
        """Send the kept warmth values to the idle process next in line (the oldest: the one
        ``hand_over`` takes first), those it has not had; not while a job runs (the process
        would replay them on the job's other core)."""
        if self.idle and self.idle[0].job_w >= 0 and not self.owner.running_jobs():
            self.warmth.send_to(self.idle[0].job_w, self.idle[0].warmth_sent)

    def job_ended(self) -> None:
        """A job process ended: kill what it left behind (once it is safe)."""
        self.strays_due = True
        self.end_strays()

    def end_strays(self) -> None:
        """Kill what ended jobs left behind (``sandbox.end_adopted``), once the zygote has
        announced every job process on its way: those are the worker's children too, and
        must not be taken for strays. Not waited for: the zygote's next announcement does it."""
        if self.strays_due and not any(z.pending for z in self.zygotes.values()):
            self.strays_due = False
            sandbox.end_adopted(self.own_pids())

    def _usable(self, refuse: frozenset[str]) -> Child | None:
        """The oldest idle process (the most likely to have warmed up) fit for a job that
        runs without ``refuse``."""
        for child in self.idle:
            if child.preloaded <= self.libraries and not child.preloaded & refuse:
                return child
        return None

    def own_pids(self) -> list[int]:
        return [*(zygote.pid for zygote in [*self.zygotes.values(), *self.coming.values()]),
                *(child.pid for child in self.idle),
                *(child.pid for child in self.owner.running_jobs())]

    # ------------------------------------------------------- idle children
    def ensure_idle(self) -> None:
        while len(self.idle) + self._coming() < IDLE_CHILDREN and self.owner.wanted():
            zygote = self._zygote()
            if zygote is not None:
                if zygote.request(self.network):
                    continue
                self.stop_zygote(zygote)  # gone: the worker forks these from now on
            child = self._fork()
            if child is None:
                return
            self._add_idle(child)

    def retire(self, child: Child) -> None:
        """Stop an idle child (it leaves at once: no job will come)."""
        self.idle.remove(child)
        if child.pidfd is not None:
            self._unregister(child.pidfd)
        close_job_w(child)
        self.discard(child)
        self.share_warmth()  # another one is next in line

    def idle_died(self, child: Child) -> None:
        if child not in self.idle:
            return
        self.retire(child)
        if time.monotonic() - child.forked_at > 1.0:  # no fork storm if children die at once
            self.ensure_idle()

    def _add_idle(self, child: Child) -> None:
        self.idle.append(child)
        if child.pidfd is not None:
            self.selector.register(child.pidfd, selectors.EVENT_READ,
                                   functools.partial(self.idle_died, child))
        self.share_warmth()

    def discard(self, child: Child) -> None:
        kill_child(child.pid)
        reap(child.pid)
        self.release(child)

    def release(self, child: Child) -> None:
        """Close the worker's ends of a child's pipes (``job_w`` is closed at hand-over) and
        remove its private folder."""
        sandbox.job_ended(child.job_dir)
        fds = [child.result_r, child.out_r]
        if child.pidfd is not None:
            fds.append(child.pidfd)
        for fd in fds:
            self._unregister(fd)
            try:
                os.close(fd)
            except OSError:
                pass

    # -------------------------------------------------------------- zygote
    def _zygote_key(self) -> bool:
        """Which zygote forks the job processes of the current network policy: the second
        one (True) for jobs allowed the network where the first one has none."""
        return self.network and sandbox.zygote_isolates_network()

    def _zygote(self) -> Zygote | None:
        """The zygote for the current policy, started now if it is the second one and never
        tried; None: the worker forks the job processes."""
        key = self._zygote_key()
        if key and key not in self.zygotes_tried:
            self.start_zygote(key)
        return self.zygotes.get(key)

    def start_zygote(self, network: bool) -> None:
        """Fork a zygote now (the first one right after the collapse into huge pages, which it
        keeps), unless this worker cannot or must not (``FXLS_WORKER_ZYGOTE=0``)."""
        self.zygotes_tried.add(network)
        if os.environ.get("FXLS_WORKER_ZYGOTE", "1") == "0" or not sandbox.can_fork_siblings():
            return
        flush_output()
        self.zygotes_started += 1
        # the zygote has no fds of the worker's: a job process closes only the ones it names
        serve = functools.partial(self.owner.serve_job, os.getpid())
        zygote = Zygote.start(serve, self.zygotes_started, isolate=not network,
                              preload=self.preload)
        if zygote is None:
            return
        self.selector.register(zygote.fileno(), selectors.EVENT_READ,
                               functools.partial(self.take_announcements, zygote))
        previous = self.coming.get(network)
        if previous is not None:  # stopped while still in the table: it is found there
            self.stop_zygote(previous)
        if zygote.ready:
            self._install(network, zygote)
        else:
            self.coming[network] = zygote
            if self.coming_paused:
                _signal(zygote.pid, signal.SIGSTOP)

    def jobs_running(self, count: int) -> None:
        """Stop the zygotes importing libraries while ``count`` jobs take every core (for
        ``PAUSE_LIMIT_S`` after their start); let them go on after."""
        self.pause_coming(count >= CORES)

    def pause_coming(self, paused: bool) -> None:
        if paused == self.coming_paused:
            return
        self.coming_paused = paused
        now = time.monotonic()
        for zygote in self.coming.values():
            if not paused:
                _signal(zygote.pid, signal.SIGCONT)
            elif now - zygote.started_at < PAUSE_LIMIT_S:
                _signal(zygote.pid, signal.SIGSTOP)

    def _install(self, network: bool, zygote: Zygote) -> None:
        """``zygote`` forks the job processes of ``network`` from now on: the one before it
        ends, and so do the idle processes it did not fork (they lack what it imported).
        It stays among the coming ones until the old one has ended: stopping a zygote ends
        the strays of finished jobs, everything that is not the pool's own."""
        old = self.zygotes.get(network)
        if old is not None and old is not zygote:
            self.settle()
            self.stop_zygote(old)
        self.coming.pop(network, None)
        self.zygotes[network] = zygote
        # paused as a coming zygote after it sent its news: it serves from now on
        _signal(zygote.pid, signal.SIGCONT)
        if network == self._zygote_key():
            for child in [c for c in self.idle if c.zygote != zygote.generation]:
                self.retire(child)
            self.ensure_idle()

    def stop_zygote(self, zygote: Zygote) -> None:
        for table in (self.zygotes, self.coming):
            for network, known in list(table.items()):
                if known is zygote:
                    del table[network]
                    self._unregister(zygote.fileno())
                    zygote.stop()
                    self.end_strays()

    def _coming(self) -> int:
        """Job processes of the current policy asked of a zygote and not announced yet."""
        zygote = self.zygotes.get(self._zygote_key())
        return zygote.pending if zygote is not None else 0

    def take_announcements(self, zygote: Zygote, wait: bool = False) -> None:
        """Adopt the job processes ``zygote`` announced (waiting for one if ``wait``); a
        zygote that is gone is replaced by the worker's own forks."""
        if zygote not in self.zygotes.values() and zygote not in self.coming.values():
            self._unregister(zygote.fileno())  # one the pool let go: its end must not fire
            return
        while zygote in self.zygotes.values() or zygote in self.coming.values():
            try:
                announcement = zygote.receive(wait=wait)
            except (ForkFailed, EOFError, OSError):  # the worker's forks have fallbacks
                self.stop_zygote(zygote)
                if not zygote.ready:
                    self.owner.zygote_news(News(ready=False), zygote.preloaded)
                return
            if announcement is None:
                break
            if isinstance(announcement, News):
                self._take_news(zygote, announcement)
            else:
                self._adopt(announcement, zygote)
            wait = False
        self.end_strays()

    def _take_news(self, zygote: Zygote, news: News) -> None:
        """A preloading zygote is ready (without the libraries it left out, and with those
        they imported: what it has is what the pool's zygotes import from now on), or has
        ended."""
        if not news.ready:
            self.stop_zygote(zygote)
            self.owner.zygote_news(news, zygote.preloaded)
            return
        self.preload = self.owner.zygote_news(news, zygote.preloaded)
        self.libraries = zygote.preloaded = frozenset(names[0] for names in self.preload)
        network = next((n for n, z in self.coming.items() if z is zygote), None)
        if network is not None:
            self._install(network, zygote)

    def _wait_for_child(self) -> None:
        zygote = self._zygote()
        while not self.idle and zygote is not None and zygote.pending:
            self.take_announcements(zygote, wait=True)
            zygote = self._zygote()

    def settle(self) -> None:
        """Adopt every job process a zygote is forking now (they are not strays)."""
        for zygote in list(self.zygotes.values()):
            while zygote in self.zygotes.values() and zygote.pending:
                self.take_announcements(zygote, wait=True)

    def _adopt(self, announcement: Announcement, zygote: Zygote) -> None:
        for fd in (announcement.result_r, announcement.out_r):
            os.set_blocking(fd, False)
        child = Child(announcement.pid, pidfd_open(announcement.pid), announcement.job_w,
                      announcement.result_r, announcement.out_r, announcement.job_dir,
                      preloaded=zygote.preloaded, zygote=zygote.generation)
        if (announcement.network != self.network or not self.owner.wanted()
                or not child.preloaded <= self.libraries):
            close_job_w(child)  # asked for before the setting changed: never used
            self.discard(child)
            return
        self._add_idle(child)

    def _fork(self) -> Child | None:
        """A job process forked by the worker itself (no zygote)."""
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        private = [*self._private_fds(), job_w, result_r, out_r]
        self.forks += 1
        worker_pid = os.getpid()
        job_dir = f"{worker_pid}-{self.forks}"
        flush_output()
        try:
            pid = sandbox.fork_job_process(self.network)
        except OSError:
            for fd in (job_r, job_w, result_r, result_w, out_r, out_w):
                os.close(fd)
            return None
        if pid == 0:
            self.owner.serve_job(worker_pid, job_r, result_w, out_w, private, job_dir)
        for fd in (job_r, result_w, out_w):
            os.close(fd)
        os.set_blocking(result_r, False)
        os.set_blocking(out_r, False)
        return Child(pid, pidfd_open(pid), job_w, result_r, out_r, job_dir)

    def _private_fds(self) -> list[int]:
        fds = [*self.owner.worker_fds(), self.selector.fileno()]
        fds += [zygote.fileno() for zygote in [*self.zygotes.values(), *self.coming.values()]]
        for child in [*self.owner.running_jobs(), *self.idle]:
            fds += [child.job_w, child.result_r, child.out_r]
            if child.pidfd is not None:
                fds.append(child.pidfd)
        return [fd for fd in fds if fd >= 0]

    def _unregister(self, fd: int) -> None:
        try:
            self.selector.unregister(fd)
        except (KeyError, ValueError):
            pass


# ---------------------------------------------------------------- helpers
def close_job_w(child: Child) -> None:
    """Close the job pipe once; -1 marks it closed so its number is never closed again."""
    if child.job_w >= 0:
        os.close(child.job_w)
        child.job_w = -1


def pidfd_open(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        return None


def reap(pid: int) -> tuple[int | None, float]:
    """Wait for ``pid``: its exit status and the CPU seconds it used (None, 0.0 if it was
    reaped already)."""
    try:
        _, status, usage = os.wait4(pid, 0)
    except ChildProcessError:
        return None, 0.0
    return status, usage.ru_utime + usage.ru_stime


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def kill_child(pid: int) -> None:
    killpg(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def killpg(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
