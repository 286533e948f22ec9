"""What importing a library started that a fork would break: threads (a lock held by a
thread the forked child does not have; a zygote with a second thread cannot clone job
processes into their namespaces), child processes left running, sockets (one connection
shared by every job). Read from ``/proc/self``, before and after the import."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Before:
    threads: frozenset[str]
    sockets: int


def before() -> Before:
    return Before(frozenset(_tasks()), _sockets())


def what_it_started(since: Before) -> str | None:
    """What was started since ``since``, in words; None if nothing."""
    started = [tid for tid in _tasks() if tid not in since.threads]
    if started:
        names = ", ".join(sorted({_thread_name(tid) for tid in started}))
        return f"its import starts {len(started)} thread(s) ({names})"
    children = _children()
    if children:
        return f"its import leaves {len(children)} child process(es) running"
    if _sockets() > since.sockets:
        return "its import opens a socket"
    return None


def _tasks() -> list[str]:
    try:
        return os.listdir("/proc/self/task")
    except OSError:
        return []


def _thread_name(tid: str) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return tid


def _children() -> list[str]:
    found = []
    for tid in _tasks():
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                found += f.read().split()
        except OSError:
            pass
    return found


def _sockets() -> int:
    count = 0
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return count
