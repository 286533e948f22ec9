"""The job side of a fork: wait for the job, run ``module:function(params)``, report, exit.

Everything here runs in a child forked from the warm worker; it must never return into the
worker's own code, so ``serve_job`` always ends in ``os._exit``.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import resource
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from fxls.worker.protocol import read_all, write_all

_PR_SET_PDEATHSIG = 1
_MEMORY_MESSAGES = ("can't allocate memory", "cannot allocate memory", "out of memory")


@dataclass
class ChildFds:
    job_r: int  # the job arrives here (JSON until EOF); EOF without data means "exit"
    result_w: int  # the result goes here (JSON until EOF)
    out_w: int  # becomes the child's stdout and stderr


@dataclass
class Limits:
    memory_mb: int | None = None
    cpu_s: float | None = None


def serve_job(fds: ChildFds, limits: Limits, worker_pid: int, close: Iterable[int]) -> NoReturn:
    """Run in the freshly forked child; never returns."""
    code = 0
    try:
        _detach(worker_pid, close)
        _redirect_output(fds.out_w)
        _report_where_on_fault()
        raw = read_all(fds.job_r)
        os.close(fds.job_r)
        if not raw:  # the worker retired this child (or died) before giving it a job
            os._exit(0)
        job = json.loads(raw.decode("utf-8"))
        _apply_limits(limits)
        payload = run_target(job["target"], job["params"])
        flush_output()
        write_all(fds.result_w, payload)
        os.close(fds.result_w)  # EOF now: the worker reports without waiting for our exit
    except BaseException:  # nothing may escape into the worker's code path
        code = 70
        try:
            traceback.print_exc()
            flush_output()
        except BaseException:
            pass
    finally:
        os._exit(code)


def run_target(target: str, params: Any) -> bytes:
    """Call ``target`` and encode its outcome as the JSON result payload."""
    try:
        value = _resolve(target)(params)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are job errors too
        return _failure(exc)
    try:
        return json.dumps({"status": "ok", "value": value}).encode("utf-8")
    except BaseException as exc:
        detail = f"the return value of {target} is not JSON-serialisable: {exc!r}"
        status = "memory" if isinstance(exc, MemoryError) else "error"
        return json.dumps({"status": status, "error": detail}).encode("utf-8")


def _resolve(target: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"target must look like 'package.module:function', got {target!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _failure(exc: BaseException) -> bytes:
    memory = is_memory_error(exc)
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException:  # formatting itself can fail when memory is exhausted
        text = f"{type(exc).__name__}: {exc}"
    status = "memory" if memory else "error"
    return json.dumps({"status": status, "error": text}).encode("utf-8")


def is_memory_error(exc: BaseException) -> bool:
    """A MemoryError anywhere in the chain, or an allocator's out-of-memory RuntimeError."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        message = str(current).lower() if isinstance(current, RuntimeError) else ""
        if any(text in message for text in _MEMORY_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False


def _detach(worker_pid: int, close: Iterable[int]) -> None:
    """Own process group, die with the worker, default signals, no worker fds."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    if not _set_parent_death_signal():
        threading.Thread(target=_watch_parent, args=(worker_pid,), daemon=True).start()
    if os.getppid() != worker_pid:  # the worker died before the death signal was armed
        os._exit(0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass


def _set_parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except Exception:
        return False


def _watch_parent(worker_pid: int) -> None:
    while os.getppid() == worker_pid:
        time.sleep(0.5)
    os._exit(0)


#: sent by the worker just before it kills a job for a timeout: dump where it is running
DUMP_SIGNAL = signal.SIGUSR1


def _report_where_on_fault() -> None:
    """Crashes (SIGSEGV...) and the pre-timeout signal print the Python stack to the output,
    so the caller can tell which line was running."""
    faulthandler.enable(file=sys.stderr, all_threads=False)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=False, chain=False)


def _redirect_output(out_w: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.close(out_w)


def flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _apply_limits(limits: Limits) -> None:
    if limits.memory_mb:
        _lower_limit(resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024)
    if limits.cpu_s:
        _lower_limit(resource.RLIMIT_CPU, max(1, int(limits.cpu_s + 0.999)))


def _lower_limit(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass
