"""The worker's watch over a running job's limits, all its processes together.

The kernel limits each process (``RLIMIT_AS``: the address space of one process), not a job
that forks: four forks of 1.5 GB each under a 2 GB limit used 5.4 GB. Cgroups would limit a
job as a whole, but most user machines and CI runners do not delegate them to an
unprivileged process. So the worker samples /proc every ``SAMPLE_S`` for each running job:

- its processes: the job process and its descendants. In the namespaces the job is PID 1 of
  its own PID namespace, so every process it starts stays in its tree (orphans are
  re-parented to it); behind a relay (``sandbox._relay``) the tree starts at the relay's
  child. Without namespaces, a process that leaves the tree (a double fork) is re-parented
  to the worker and not counted; it is killed when the job ends (``sandbox.end_adopted``);
- its memory: the resident memory of those processes (``statm``, cheap) and, only when that
  sum is over the limit, their proportional memory (``smaps_rollup``: pages shared between
  processes divided among them, so that forks count their copies once);
- the space its private folder takes, where the job could not mount a tmpfs of the limit's
  size on it (``sandbox.limit_private_folder``: the worker, outside the job's mount
  namespace, then sees the empty folder it made).

Over a limit, the worker asks the job for its stack, then ends it (``Worker``): the caller
reports where it was running and which setting it exceeded.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

from fxls.worker import procfs, sandbox
from fxls.worker.policy import JobPolicy

#: how often a running job's processes (and private folder) are sampled
SAMPLE_S = 0.1
#: a sample that took this many times less than the wait after it (up to the longest gap)
_BACK_OFF = 3
_LONGEST_GAP_S = 0.5


@dataclass
class JobWatch:
    """What the worker samples of one running job."""

    #: the worker's child for this job (the job process, or the relay in front of it)
    pid: int
    policy: JobPolicy
    #: the job's private folder, as the worker sees it
    folder: str | None
    #: the first process of the job's tree (the relay's child, once it is known)
    root: int = 0
    next_sample: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.root = self.pid

    def due(self, now: float) -> bool:
        return now >= self.next_sample

    def check(self, now: float) -> str | None:
        """Sample the job: which limit it exceeded, in words naming the setting; None if
        none."""
        if self.root == self.pid:
            self.root = _job_process(self.pid)
        found = over_limits(self.root, self.policy, self.folder)
        # a sample costs ~0.2 ms; one that reads proportional memory ~20 ms per 200 MB
        # process: then the worker spends at most a third of its time sampling this job,
        # and samples it at least every ``_LONGEST_GAP_S``
        spent = time.monotonic() - now
        self.next_sample = now + min(max(SAMPLE_S, _BACK_OFF * spent), _LONGEST_GAP_S)
        return found


    def pause_others(self) -> None:
        """Stop the job's other processes (``SIGSTOP``) while it prints its stack before it
        is ended: they take no more memory or CPU time meanwhile (on a busy machine, forks
        filling memory kept the job from printing in time)."""
        for pid in procfs.process_tree(self.root)[1:]:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass


def over_limits(root: int, policy: JobPolicy, folder: str | None) -> str | None:
    """Which limit of ``policy`` the process tree of ``root`` and ``folder`` exceed now."""
    limit = policy.max_processes
    pids = procfs.process_tree(root, limit=(limit or 100_000) + 1)
    if limit and len(pids) > limit:
        return (f"it ran more than {limit} processes at once: the limit is `max_processes` "
                f"= {limit} in [tool.fxls]")
    memory_mb = policy.memory_mb
    if memory_mb and sum(procfs.resident_kb(p) for p in pids) > memory_mb * 1024:
        used_kb = sum(procfs.pss_kb(p) for p in pids)
        if used_kb > memory_mb * 1024:
            return (f"its {_processes(len(pids))} used {used_kb // 1024:,} MB of memory "
                    f"together: the limit is `memory_limit_mb` = {memory_mb} in [tool.fxls]")
    tmp_mb = policy.tmp_mb
    if tmp_mb and folder is not None:
        used_kb = procfs.folder_kb(folder, limit_kb=tmp_mb * 1024)
        if used_kb > tmp_mb * 1024:
            return (f"its temporary folder took more than {tmp_mb} MB: the limit is "
                    f"`tmp_limit_mb` = {tmp_mb} in [tool.fxls]")
    return None


def _processes(count: int) -> str:
    return "process" if count == 1 else f"{count} processes"


def _job_process(pid: int) -> int:
    """The job process behind ``pid``: ``pid`` itself, or, when ``pid`` is a relay (a
    process of the worker's PID namespace whose only child is PID 1 of a namespace of its
    own), that child."""
    if not sandbox.enabled() or not sandbox.support().namespaces:
        return pid
    own = procfs.pid_namespace(os.getpid())
    if procfs.pid_namespace(pid) != own:
        return pid
    children = procfs.thread_children(pid)
    if len(children) == 1 and procfs.pid_namespace(children[0]) not in (own, None):
        return children[0]
    return pid
