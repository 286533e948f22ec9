"""The job side of a fork: warm up, wait for the job, run ``module:function(params)``,
report, exit.

Everything here runs in a child forked from the warm worker; it must never return into the
worker's own code, so ``serve_job`` always ends in ``os._exit``. The job arrives as the
client sent it, undecoded by the worker: its ``run`` request and its params, two frames
decoded here once (``read_job``). Results go to the worker as
length-prefixed JSON frames: any number of ``partial`` ones (``send_partial``), then the
final one, then EOF.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import os
import resource
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from fxls.worker import api, sandbox, where
from fxls.worker.api import encode_frame, write_frame
from fxls.worker.installed_libraries import NAMES_LIMIT
from fxls.worker.job_inbox import JobInbox
from fxls.worker.messages import RunRequest, decode_request
from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import (
    IMPORTS,
    FrameBuffer,
    JobStatus,
    JsonValue,
    ProtocolError,
    decode,
    read_all,
)
from fxls.worker.worker_imports import in_packages

_PR_SET_PDEATHSIG = 1
#: taken when the worker imports this module, before any user code: the job's way out must
#: hold whatever user code rebinds (``api.catch_process_exits`` replaces ``os._exit``)
_os_exit = os._exit
_getpid = os.getpid
#: the kernel's own process limit (threads count too, and only for users other than root)
#: stops a fork bomb this far above ``max_processes``; the worker ends the job before
_TASK_HEADROOM = 256
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


def serve_job(
    fds: ChildFds,
    limits: Limits,
    worker_pid: int,
    close: Iterable[int],
    warm_up: str | None = None,
    learn_imports: tuple[str, ...] = (),
    job_dir: str = "",
    warm_from: str | None = None,
) -> NoReturn:
    """Run in the freshly forked child (``job_dir``: the name of its private folder, see
    ``sandbox.enter``); never returns."""
    code = 0
    try:
        _detach(worker_pid, close)
        sandbox.enter(job_dir)
        raw = _receive_job(fds.job_r, warm_up, warm_from)
        _redirect_output(fds.out_w)
        _report_where_on_fault()
        if not raw:  # the worker retired this child (or died) before giving it a job
            _os_exit(0)
        request, params = read_job(raw)
        _apply_limits(limits, request.policy)
        sandbox.confine(request.policy)
        # after confine: a process with more than one thread cannot enter the namespace
        # that locks its read-only mounts
        threading.Thread(target=_take_signals, name="fxls-signals", daemon=True).start()
        api.begin_job(fds.result_w, request.policy)
        threading.Thread(target=where.watch, args=(threading.get_ident(),),
                         name="fxls-watchdog", daemon=True).start()
        loaded = set(sys.modules)
        payload = run_target(request.target, params)
        api.end_job()
        flush_output()
        _send_imports(fds.result_w, loaded, learn_imports)
        write_frame(fds.result_w, payload)
        os.close(fds.result_w)  # EOF now: the worker reports without waiting for our exit
    except BaseException:  # nothing may escape into the worker's code path
        code = 70
        try:
            traceback.print_exc()
            flush_output()
        except BaseException:
            pass
    finally:
        _os_exit(code)


def read_job(raw: bytes) -> tuple[RunRequest, JsonValue]:
    """The job's ``run`` request and params, from the two frames the worker handed on."""
    frames = [body for body in FrameBuffer().bodies(raw) if isinstance(body, bytes)]
    if len(frames) != 2:
        raise ProtocolError(f"a job of {len(frames)} frames")
    request = decode_request(decode(frames[0]))
    if not isinstance(request, RunRequest):
        raise ProtocolError(f"a job that is a {request.op.value!r} request")
    return request, decode(frames[1])


def _send_imports(result_w: int, loaded: set[str], packages: tuple[str, ...]) -> None:
    """Tell the worker which modules the job imported, a frame ahead of the final one:
    those of ``packages`` (the worker may import them itself for later jobs) and all the
    others (its zygotes may import the third-party libraries among them,
    ``fxls.worker.library_learner``)."""
    new = sorted(set(sys.modules) - loaded)
    if new:
        modules = [n for n in new if in_packages(n, packages)]
        write_frame(result_w, encode_frame(IMPORTS, value={
            "modules": modules, "libraries": new[:NAMES_LIMIT]}))


def run_target(target: str, params: JsonValue) -> bytes:
    """Call ``target`` and encode its outcome as the final result frame."""
    try:
        value = _resolve(target)(params)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are job errors too
        return _failure(exc)
    try:
        return encode_frame(JobStatus.OK, value=value)
    except BaseException as exc:
        detail = f"the return value of {target} is not JSON-serialisable: {exc!r}"
        status = JobStatus.MEMORY if isinstance(exc, MemoryError) else JobStatus.ERROR
        return encode_frame(status, error=detail)


def _receive_job(job_r: int, warm_up: str | None, warm_from: str | None = None) -> bytes:
    """The job's bytes; before they arrive, run ``warm_up`` (``module:function``) if given,
    then ``warm_from`` on each warmth value the worker sends meanwhile (``job_inbox``).

    Warming up in the idle child makes the job's first touches of the warm heap (reference
    counts: copy-on-write faults) and lazy caches happen before the job, off its clock. The
    job is read on a thread meanwhile, so the worker never blocks writing a large one.
    """
    if not warm_up or (not warm_from and _readable(job_r)):
        return _read_job(job_r)
    inbox = JobInbox(job_r)
    run_warm_up(warm_up)
    while warm_from and not api.job_waiting():
        value = inbox.next_warmth()
        if value is not None:
            run_warm_up(warm_from, value)
            if threading.active_count() > 2 and not api.job_waiting():
                _os_exit(0)  # it left a thread (main, the inbox's and more): the job could
                # not be confined here; the worker replaces an idle process that ended
    return inbox.job_bytes()


def _read_job(job_r: int) -> bytes:
    try:
        return read_all(job_r)
    except OSError:
        return b""
    finally:
        os.close(job_r)


def _readable(fd: int) -> bool:
    try:
        return bool(select.select([fd], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def run_warm_up(target: str, *value: object) -> None:
    """Run the warm-up ``target()`` (``fxls.worker.api``; ``target(value)`` for a warmth
    value) silently, errors swallowed, and put ``sys.path`` back; then freeze what it left so
    forks share it."""
    saved_path = list(sys.path)
    saved_fds = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        _resolve(target)(*value)
    except BaseException:  # the job must run even if warming up failed
        pass
    finally:
        flush_output()
        for fd, saved in zip((1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)
        sys.path[:] = saved_path
        gc.collect()
        gc.freeze()


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
    status = JobStatus.MEMORY if memory else JobStatus.ERROR
    return encode_frame(status, error=text)


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
    if not set_parent_death_signal():
        threading.Thread(target=_watch_parent, args=(worker_pid,), daemon=True).start()
    # the worker died before the death signal was armed (PID 1 of a namespace sees no
    # parent; there a dead worker shows as the job pipe's EOF)
    if not sandbox.in_namespaces() and os.getppid() != worker_pid:
        os._exit(0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for signum in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass


def set_parent_death_signal() -> bool:
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
    _os_exit(0)


#: sent by the worker just before it kills a job for a timeout: dump where it is running
DUMP_SIGNAL = signal.SIGUSR1


def _report_where_on_fault() -> None:
    """Crashes (SIGSEGV...) and the signal the worker sends before it ends a job (a timeout,
    a limit) print the Python stack to the output, so the caller can tell which line was
    running. The dump lists every thread, the main one last (``outcome.running_line`` reads
    the last); a thread of its own that never blocks a signal takes the worker's when the
    job's code blocked it in the main thread (``pthread_sigmask``), started once the job is
    confined. Code that ignores the signal is located by the watchdog's samples instead
    (``fxls.worker.where``)."""
    faulthandler.enable(file=sys.stderr, all_threads=False)
    faulthandler.register(DUMP_SIGNAL, file=sys.stderr, all_threads=True, chain=False)


def _take_signals() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [DUMP_SIGNAL])
    while True:
        time.sleep(3600.0)


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


def _apply_limits(limits: Limits, policy: JobPolicy) -> None:
    """The kernel's share of the job's limits (the worker watches the job's processes
    together, ``fxls.worker.limits``): each process's address space, CPU time, a process
    limit far above ``max_processes`` against fork bombs (per job in its own user namespace),
    and the size of its private folder (a tmpfs in its own mount namespace)."""
    memory_mb = policy.memory_mb or limits.memory_mb
    if memory_mb:
        _lower_limit(resource.RLIMIT_AS, memory_mb * 1024 * 1024)
    if limits.cpu_s:
        _lower_limit(resource.RLIMIT_CPU, max(1, int(limits.cpu_s + 0.999)))
    if policy.max_processes and sandbox.in_namespaces():
        _lower_limit(resource.RLIMIT_NPROC, policy.max_processes + _TASK_HEADROOM)
    if policy.tmp_mb:
        sandbox.limit_private_folder(policy.tmp_mb)


def _lower_limit(which: int, soft: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(which, (soft, hard))
    except (ValueError, OSError):
        pass
