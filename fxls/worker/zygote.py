"""The zygote: a copy of the warm worker, made once, that does nothing but fork job processes.

Why not fork from the worker itself: a fork copies the parent's page tables, and a process
exiting walks its own; both cost in proportion to the 4 KB pages mapped. The worker's warm
heap is collapsed into 2 MB pages for that reason (``hugepages``), but every page the worker
writes afterwards (its loop runs Python: reference counts, allocations) splits the 2 MB
page around it, in the parent of all later forks; after a few jobs most of the heap is
mapped page by page again and each job process costs milliseconds more to fork and to tear
down. The worker also copies each page it writes again after every fork (~500 copy-on-write
faults per job). The zygote is forked right after the collapse and runs a loop that writes
almost nothing, so its heap stays in 2 MB pages and it pays no copies; the worker, which
no longer forks, keeps the pages it writes as its own.

The job processes are the worker's children all the same (``CLONE_PARENT``): it reaps them,
reads their CPU time, and gets their pidfds. The zygote makes a job process's three pipes,
forks it, and passes the worker's ends back with the new pid over a Unix socket
(``SCM_RIGHTS``); it never waits for its job processes and never touches a job.

A zygote may *preload* third-party libraries that jobs import (``fxls.worker.library_learner``):
it imports them before its loop (after moving into its empty network namespace), so the
worker never runs their code. First it gives up writing anywhere but the jobs' folder,
where its own temporary folder (its ``HOME`` and ``TMPDIR`` while it imports) lies: with
namespaces, every mount read-only and locked as in a job (Landlock would forbid the mounts
its job processes make), else Landlock and the metadata filter, as a job has them. Each
module it imports must come from the interpreter's installation (``import_origin``). It
checks each import (``import_check``): a library whose import started a thread, a process
or a socket is named in its news and the zygote exits (it could not fork job processes
safely); else it announces that it is ready (``News``), and the worker lets it replace the
zygote before it.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import importlib
import json
import os
import select
import signal
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from fxls.worker import guard, import_check, landlock, metadata_filter, mounts, sandbox
from fxls.worker.child import flush_output, set_parent_death_signal
from fxls.worker.hugepages import collapse_anonymous_memory
from fxls.worker.import_origin import Origins, interpreter_folders, only_from

#: a request: one byte, whether the job process may use the network
_WITH_NETWORK, _WITHOUT_NETWORK = b"N", b"n"
#: an announcement: pid (-1: the fork failed), serial number, network allowed
_ANNOUNCEMENT = struct.Struct("=iI?")
_FDS = 3
#: how long the worker waits for an announcement it needs now (a fork takes ~1 ms)
_WAIT_S = 5.0
_MS_REC, _MS_PRIVATE = 1 << 14, 1 << 18

#: in the new job process: ``(job_r, result_w, out_w, fds to close, job_dir)``
ServeJob = Callable[[int, int, int, list[int], str], NoReturn]


#: the largest news message (JSON, no fds) a preloading zygote sends
_NEWS_LIMIT = 64 * 1024
_LOADED_LIMIT = 500
#: libraries to import: each a top-level name, then submodules
Preload = tuple[tuple[str, ...], ...]
#: where a preloading zygote's imports may come from (set by the learner before it starts
#: one; the zygote is forked with it)
_origins: Origins | None = None


def set_origins(origins: Origins) -> None:
    global _origins
    _origins = origins


@dataclass
class News:
    """What a preloading zygote says once it imported its libraries (or could not)."""

    #: it serves from now on (else it has ended)
    ready: bool
    #: libraries it left out, and why
    left_out: dict[str, str] = field(default_factory=dict)
    #: the other top-level modules its imports loaded (at most ``_LOADED_LIMIT``)
    loaded: list[str] = field(default_factory=list)


class ForkFailed(Exception):
    """The zygote could not fork a job process (the kernel refused the clone)."""


@dataclass
class Announcement:
    """A job process the zygote forked, with the worker's ends of its pipes."""

    pid: int
    job_dir: str
    network: bool
    job_w: int
    result_r: int
    out_r: int


class Zygote:
    """The worker's handle on its zygote process."""

    def __init__(self, pid: int, channel: socket.socket, generation: int,
                 preloaded: frozenset[str] = frozenset()) -> None:
        self.pid = pid
        self.channel = channel
        self.generation = generation
        #: requests sent whose announcement has not arrived yet
        self.pending = 0
        #: the libraries (top-level names) it imports before it serves
        self.preloaded = preloaded
        self.ready = not preloaded
        self.started_at = time.monotonic()

    @classmethod
    def start(cls, serve_job: ServeJob, generation: int, isolate: bool = True,
              preload: Preload = ()) -> Zygote | None:
        """Fork the zygote from the calling (single-threaded) worker; None if that fails.
        ``serve_job`` runs in each job process the zygote forks and never returns.
        ``isolate``: the zygote moves into an empty network namespace its job processes
        share (``sandbox.isolate_network_for_siblings``); it then serves jobs without
        network only. ``preload``: libraries it imports first (its ``News`` follows)."""
        worker_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError:
            worker_end.close()
            zygote_end.close()
            return None
        if pid == 0:
            try:
                _serve(zygote_end.detach(), os.getppid(), generation, serve_job, isolate,
                       preload)
            finally:
                os._exit(70)
        zygote_end.close()
        return cls(pid, worker_end, generation, frozenset(names[0] for names in preload))

    def fileno(self) -> int:
        return self.channel.fileno()

    def request(self, network: bool) -> bool:
        """Ask for one more job process; False if the zygote is gone."""
        try:
            self.channel.send(_WITH_NETWORK if network else _WITHOUT_NETWORK)
        except OSError:
            return False
        self.pending += 1
        return True

    def receive(self, wait: bool = False) -> Announcement | News | None:
        """The next announcement (waiting up to a few seconds if ``wait``), or a preloading
        zygote's news; None if there is none yet. Raises ForkFailed if the zygote could not
        fork the job process, EOFError if the zygote is gone."""
        if not select.select([self.channel], [], [], _WAIT_S if wait else 0)[0]:
            if wait:
                raise EOFError("the zygote does not answer")
            return None
        data, ancillary, _, _ = self.channel.recvmsg(
            _NEWS_LIMIT, socket.CMSG_SPACE(_FDS * array.array("i").itemsize))
        if not data:
            raise EOFError("the zygote is gone")
        fds = _received_fds(ancillary)
        if not self.ready and not fds and data.startswith(b"{"):
            return self._news(data)
        if len(data) != _ANNOUNCEMENT.size:
            for fd in fds:
                os.close(fd)
            raise ForkFailed(f"the zygote sent {len(data)} bytes")
        pid, serial, network = _ANNOUNCEMENT.unpack(data)
        self.pending = max(0, self.pending - 1)
        if pid < 0 or len(fds) != _FDS:
            for fd in fds:
                os.close(fd)
            raise ForkFailed(f"the zygote could not fork a job process (pid {pid})")
        job_dir = job_dir_name(os.getpid(), self.generation, serial)
        return Announcement(pid, job_dir, network, *fds)

    def _news(self, data: bytes) -> News:
        try:
            message = json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            message = {}
        if not isinstance(message, dict):
            message = {}
        left_out, loaded = message.get("left_out"), message.get("loaded")
        news = News(ready=message.get("ready") is True,
                    left_out={str(k): str(v) for k, v in left_out.items()}
                    if isinstance(left_out, dict) else {},
                    loaded=[n for n in loaded[:_LOADED_LIMIT] if isinstance(n, str)]
                    if isinstance(loaded, list) else [])
        self.ready = news.ready
        return news

    def stop(self) -> None:
        """End the zygote (job processes it forked are not affected) and reap it."""
        self.channel.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (OSError, ChildProcessError):
            pass


def job_dir_name(worker_pid: int, generation: int, serial: int) -> str:
    return f"{worker_pid}-{generation}.{serial}"


def _preload(libraries: Preload, announce: socket.socket) -> None:
    """Import each library, then its submodules (output to /dev/null; a submodule that fails
    is skipped: a job imports what is missing itself). A library whose import fails is left
    out (said in the ready news); one whose import started anything a fork would break
    (``import_check``) is said, and the zygote exits: it cannot serve. Then the heap is
    frozen and collapsed, as the worker's is after its imports, and the zygote is ready."""
    sys.dont_write_bytecode = True  # nothing of ours writes into the user's environment
    left_out: dict[str, str] = {}
    tops_before = {name.partition(".")[0] for name in list(sys.modules)}
    origins = _origins or Origins(tuple(interpreter_folders()))
    with _output_to_devnull(), only_from(origins):
        for names in libraries:
            since = import_check.before()
            try:
                importlib.import_module(names[0])
            except BaseException as error:
                left_out[names[0]] = f"its import failed: {type(error).__name__}: {error}"
            else:
                for name in names[1:]:
                    _import_or_get(name)
            started = import_check.what_it_started(since)
            if started is not None:
                _send_news(announce, {"left_out": {names[0]: started}, "ready": False})
                os._exit(0)
    gc.collect()
    gc.freeze()
    collapse_anonymous_memory()
    asked = {names[0] for names in libraries}
    loaded = sorted({name.partition(".")[0] for name in list(sys.modules)} - tops_before - asked)
    _send_news(announce, {"left_out": left_out, "ready": True,
                          "loaded": loaded[:_LOADED_LIMIT]})


def _confine() -> bool:
    """Before a library's code runs here: nothing writable but the jobs' folder (the job
    processes this zygote forks make their folders there), the zygote's own temporary
    folder inside it. False if that failed; True without the sandbox (jobs have none)."""
    folder = sandbox.job_folder("")
    if folder is None:
        return True
    jobs = folder.rstrip(os.sep)
    own = os.path.join(jobs, f"zygote-{os.getpid()}")
    try:
        os.mkdir(own, 0o700)
    except OSError:
        return False
    for name in ("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        os.environ[name] = own
    tempfile.tempdir = own
    facts = sandbox.support()
    uid, gid = os.getuid(), os.getgid()
    try:
        if facts.namespaces:
            # a user + mount namespace of its own, its mounts read-only, then locked in a
            # nested one: the job processes' mount namespaces are copies of it
            if not mounts.lock(uid, gid) or not _private_mounts():
                return False
            mounts.read_only_except([jobs])
            return mounts.lock(uid, gid)
        if facts.landlock_abi:
            landlock.restrict((jobs, *guard.ALWAYS_WRITABLE), network=True,
                              abi=facts.landlock_abi)
        if facts.seccomp:
            metadata_filter.refuse_metadata_changes()
    except OSError:
        return False
    return True


def _private_mounts() -> bool:
    """This mount namespace's mounts no longer propagate to the worker's."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) == 0


def _import_or_get(name: str) -> None:
    """Import module ``name``, else get ``name`` as a module's attribute (``from
    transformers import BertModel``: a lazy package imports the submodule that holds it)."""
    try:
        importlib.import_module(name)
        return
    except ModuleNotFoundError:
        pass
    except BaseException:
        return
    parent, _, attribute = name.rpartition(".")
    try:
        getattr(importlib.import_module(parent), attribute)
    except BaseException:
        pass


@contextlib.contextmanager
def _output_to_devnull() -> Iterator[None]:
    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    try:
        yield
    finally:
        flush_output()
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _send_news(announce: socket.socket, news: dict[str, Any]) -> None:
    try:
        announce.send(json.dumps(news)[:_NEWS_LIMIT].encode("utf-8"))
    except OSError:
        os._exit(0)  # the worker is gone


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return list(fds)


def _serve(channel: int, worker_pid: int, generation: int, serve_job: ServeJob,
           isolate: bool, preload: Preload = ()) -> NoReturn:
    """The zygote's loop: a request in, a job process out. Deliberately little Python runs
    here (every object it touches costs a page split and a copy, see the module's doc)."""
    set_parent_death_signal()
    if os.getppid() != worker_pid:
        os._exit(0)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.closerange(3, channel)
    os.closerange(channel + 1, 1 << 16)
    if isolate and sandbox.zygote_isolates_network() and not sandbox.isolate_network_for_siblings():
        os._exit(0)  # the worker forks the job processes itself
    announce = socket.socket(fileno=channel)
    if preload:
        if not _confine():
            _send_news(announce, {"left_out": {names[0]: "the zygote could not limit its "
                                               "writes" for names in preload}, "ready": False})
            os._exit(0)
        _preload(preload, announce)
    serial = 0
    while True:
        request = announce.recv(1)
        if not request:
            os._exit(0)
        serial += 1
        network = request == _WITH_NETWORK
        job_r, job_w = os.pipe()
        result_r, result_w = os.pipe()
        out_r, out_w = os.pipe()
        pid = sandbox.fork_job_process(network, sibling=True)
        if pid == 0:
            announce.detach()
            serve_job(job_r, result_w, out_w, [channel, job_w, result_r, out_r],
                      job_dir_name(worker_pid, generation, serial))
        fds = [job_w, result_r, out_r] if pid > 0 else []
        try:
            announce.sendmsg([_ANNOUNCEMENT.pack(pid, serial, network)],
                             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
                             if fds else [])
        except OSError:
            os._exit(0)  # the worker is gone
        for fd in (job_r, job_w, result_r, result_w, out_r, out_w):
            os.close(fd)
