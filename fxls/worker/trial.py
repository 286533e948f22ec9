"""A trial import of libraries, in a throwaway process forked from the worker, before a
zygote imports them for good.

A zygote forks every job process, so what it imports must survive a fork: a library whose
import starts a thread (a thread pool, a watchdog), leaves a child process behind or opens a
socket would hand a broken copy to every job (a lock held by a thread the child does not
have; a connection shared by all jobs), and a zygote with a second thread cannot clone job
processes into their namespaces. The trial imports each library in turn and reports, per
library, whether its import succeeded, how long it took, and what it started; it also lists
the files each import loaded (``libraries.full_fingerprint``). It runs in the background:
the worker reads its report from a pipe in its loop and kills it after ``TIMEOUT_S``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, NoReturn

from fxls.worker import sandbox
from fxls.worker.child import flush_output, set_parent_death_signal
from fxls.worker.protocol import HEADER, FrameBuffer, Oversized, write_all

#: a trial that takes longer is killed, its libraries left out
TIMEOUT_S = 60.0
#: the largest report read (file lists included)
REPORT_LIMIT = 16 * 1024 * 1024


@dataclass
class Trial:
    """The worker's handle on a running trial."""

    pid: int
    report_r: int
    names: list[list[str]]  # per library: its name, then its submodules
    deadline: float
    frames: FrameBuffer
    #: the newest report (each one replaces the last: a hang leaves what was done before)
    last: bytes = b""

    def fileno(self) -> int:
        return self.report_r

    def take(self, data: bytes) -> None:
        for body in self.frames.bodies(data):
            if not isinstance(body, Oversized):
                self.last = body


def start(libraries: list[list[str]]) -> Trial | None:
    """Fork a trial of ``libraries`` (each: a top-level name, then submodules to import);
    None if the fork failed."""
    report_r, report_w = os.pipe()
    flush_output()
    try:
        pid = os.fork()
    except OSError:
        os.close(report_r)
        os.close(report_w)
        return None
    if pid == 0:
        try:
            os.close(report_r)
            _run(libraries, report_w)
        finally:
            os._exit(70)
    os.close(report_w)
    os.set_blocking(report_r, False)
    return Trial(pid, report_r, libraries, time.monotonic() + TIMEOUT_S,
                 FrameBuffer(REPORT_LIMIT))


def result(trial: Trial) -> dict[str, Any]:
    """The trial's report once it has ended: library -> ``{"ok", "why", "ms", "files"}``;
    a library missing from it failed (the trial died or timed out while importing it)."""
    try:
        report = json.loads(trial.last.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return report if isinstance(report, dict) else {}


def _run(libraries: list[list[str]], report_w: int) -> NoReturn:
    """In the trial process: no fds of the worker's, output to /dev/null, no network (as in
    a zygote); import, measure, report, exit."""
    set_parent_death_signal()
    os.setpgid(0, 0)
    os.closerange(3, report_w)
    os.closerange(report_w + 1, 1 << 16)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    if sandbox.zygote_isolates_network():
        sandbox.isolate_network_for_siblings()
    os.nice(10)  # a save's job, running meanwhile, comes first
    sys.dont_write_bytecode = True
    report: dict[str, Any] = {}
    for names in libraries:
        report[names[0]] = _try(names)
        body = json.dumps(report).encode("utf-8")  # after each: if the next one hangs
        write_all(report_w, HEADER.pack(len(body)) + body)
    os._exit(0)


def _try(names: list[str]) -> dict[str, Any]:
    """Import a library, then its submodules: a submodule that fails to import is left
    out ("failed"; a lazy library's may need what is not installed), the library fails with
    its own import or with anything the imports started."""
    before = set(_tasks())
    sockets = _sockets()
    loaded = set(_module_files())
    start = time.perf_counter()
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as error:
            if name == names[0]:
                why = f"its import failed: {type(error).__name__}: {error}"
                return {"ok": False, "why": why[:300]}
            failed.append(name)
    milliseconds = round((time.perf_counter() - start) * 1000.0, 1)
    why = _what_it_started(before, sockets)
    files = {name: path for name, path in _module_files().items() if name not in loaded}
    return {"ok": why is None, "why": why, "ms": milliseconds, "files": files,
            "failed": failed}


def _what_it_started(threads_before: set[str], sockets_before: int) -> str | None:
    started = [tid for tid in _tasks() if tid not in threads_before]
    if started:
        names = ", ".join(sorted({_thread_name(tid) for tid in started}))
        return f"its import starts {len(started)} thread(s) ({names})"
    children = _children()
    if children:
        return f"its import leaves {len(children)} child process(es) running"
    if _sockets() > sockets_before:
        return "its import opens a socket"
    return None


def _module_files() -> dict[str, str]:
    files = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            files[name] = os.path.realpath(path)
    return files


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
