"""The job sandbox (Linux): what a job may touch, set up in the pre-forked idle child.

With the sandbox on (``configure``, in the warm worker before it forks):

- the worker forks each idle child straight into new user + PID + mount namespaces
  (``fork_job_process``: ``clone`` with those flags): the job process is PID 1 of its
  namespace, with a /proc of its own (``enter``), and the worker's own child, so the worker
  sees its exit status and signals it directly. Every process the job starts dies with it
  (the kernel kills a namespace whose first process ended); the job sees no process
  outside, so it can signal neither the worker nor the server. Without unprivileged user
  namespaces the job has its own process group and the worker, a child subreaper, kills
  what the job left behind (``end_adopted``).
- when the job arrives (``confine``, irreversible, before any user code): an environment of
  its own (``jobenv``: an allow-list, ``HOME`` and ``TMPDIR`` its private folder); a network
  namespace of its own unless the job allows network; in its mount namespace the listening
  Unix sockets hidden and every mount read-only but its private folder and the folders the job
  allows (``mounts``: no change of any kind, metadata included), locked in a nested user
  namespace; without namespaces a seccomp filter refuses metadata changes instead
  (``metadata_filter``); Landlock lets it write only to its private folder (and the folders
  the job allows), refuses TCP and signals to the outside; a Python-level guard
  (``fxls.worker.guard``) refuses the same writes, changes and connections with a message and
  records them for diagnostics.

``support()`` says what this kernel allows; ``describe`` puts it in words.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import resource
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, NoReturn

from fxls.worker import guard, jobenv, landlock, metadata_filter, mounts
from fxls.worker.policy import JobPolicy
from fxls.worker.procfs import child_pids

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_CLONE_PARENT = 0x00008000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 8, 4096, 1 << 14, 1 << 18
#: the system's well-known Unix sockets of services that act outside the sandbox on request
_SERVICE_SOCKETS = ("/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
                    "/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock",
                    "/run/containerd/containerd.sock", "/run/snapd.socket")
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
#: the clone system call's number, where its first argument is the flags and the others may
#: be 0 (a fork: no new stack, no TLS); elsewhere the namespaces are not used
_SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220}.get(platform.machine())
_JOBS_DIR_PREFIX = "fxls-jobs-"


@dataclass(frozen=True, slots=True)
class Support:
    """What this kernel lets an unprivileged process do for its jobs."""

    kernel: str
    namespaces: bool  # unprivileged user + PID + network namespaces
    landlock_abi: int  # 0: no Landlock
    subreaper: bool
    seccomp: bool = False  # a libseccomp binding loads (used where namespaces are not)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def writes_enforced(self) -> bool:
        """Landlock, or the read-only mounts of the job's mount namespace."""
        return self.landlock_abi >= 1 or self.namespaces

    @property
    def network_enforced(self) -> bool:
        return self.namespaces or self.landlock_abi >= 4

    @property
    def metadata_enforced(self) -> bool:
        """Changes of mode, owner, times, extended attributes: a read-only mount namespace,
        else a seccomp filter."""
        return self.namespaces or self.seccomp

    def describe(self) -> str:
        """One line for logs and ``fxls --version``."""
        parts = [f"Linux {self.kernel}" if self.kernel else platform.system()]
        parts.append("user+PID+network namespaces" if self.namespaces else "no user namespaces")
        parts.append(f"Landlock ABI {self.landlock_abi}" if self.landlock_abi else "no Landlock")
        if not self.namespaces:
            parts.append("seccomp" if self.seccomp else "no seccomp")
        kinds = ("writes", "metadata", "network", "processes")
        enforced = [name for name, on in zip(kinds, (self.writes_enforced, self.metadata_enforced,
                                                     self.network_enforced, self.namespaces),
                                             strict=True) if on]
        missing = [name for name in kinds if name not in enforced]
        line = f"sandbox: {', '.join(parts)}"
        if missing:
            line += f"; NOT enforced by the kernel: {', '.join(missing)} (Python-level guard only)"
        return line


#: what one job may do beyond its private folder (its network and ``write`` members)
Policy = JobPolicy


@dataclass(slots=True)
class _Config:
    support: Support
    jobs_dir: str  # each job's private folder is made in here


_config: _Config | None = None
#: this job process's private folder (set by ``enter``)
_job_dir: str | None = None
#: the job process is PID 1 of its own namespaces (set by ``fork_job_process``)
_in_namespaces = False
#: the worker's uid and gid (a process in a new user namespace sees 65534 until it maps them)
_outer_ids = (0, 0)
#: the job process was cloned into a network namespace of its own (no network)
_network_isolated = False
#: this process (the zygote) is in an empty network namespace that its job processes share
_siblings_share_isolation = False
_support: Support | None = None
#: the worker's pid (its network namespace's Unix sockets are hidden from jobs)
_worker_pid = 0
#: in a job process: the worker's network namespace's table of Unix sockets (``enter``)
_socket_table: int | None = None


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


# ------------------------------------------------------------- kernel facts
def support() -> Support:
    """Probe once per process: a throwaway child tries the namespaces (cheap before torch)."""
    global _support
    if _support is None:
        linux = sys.platform.startswith("linux")
        _support = Support(
            kernel=platform.release() if linux else "",
            namespaces=linux and _wanted("NAMESPACES") and _namespaces_work(),
            landlock_abi=landlock.abi_version() if linux and _wanted("LANDLOCK") else 0,
            subreaper=linux,
            seccomp=linux and _wanted("SECCOMP") and metadata_filter.available(),
        )
    return _support


def _wanted(feature: str) -> bool:
    """``FXLS_SANDBOX_<FEATURE>=0`` leaves a kernel feature unused (to test the fallbacks, or
    where it misbehaves)."""
    return os.environ.get(f"FXLS_SANDBOX_{feature}", "1") != "0"


def _namespaces_work() -> bool:
    """Whether a child can be cloned into new user + PID namespaces (PID 1 there) and give
    itself a network namespace, as job processes are."""
    if _SYS_CLONE is None:
        return False
    pid = _clone(_CLONE_NEWUSER | _CLONE_NEWPID)
    if pid == 0:
        os._exit(0 if os.getpid() == 1 and _unshare(_CLONE_NEWNET) else 1)
    if pid < 0:
        return False
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _clone(namespaces: int) -> int:
    """``os.fork()`` whose child starts in new ``namespaces``: 0 in the child, its pid in the
    parent, -1 if the kernel refused. As ``os.fork`` does, the interpreter is told before
    and after (locks, at-fork hooks), and the GIL stays held across the call (``PyDLL``).
    Unlike glibc's ``fork``, the raw call skips glibc's own at-fork handling, which matters
    only in a multi-threaded parent (``fork_job_process`` checks)."""
    before, after_parent, after_child, syscall = _clone_calls()
    zero = ctypes.c_long(0)
    before()
    pid = syscall(ctypes.c_long(_SYS_CLONE), ctypes.c_long(namespaces | signal.SIGCHLD),
                  zero, zero, zero, zero)
    if pid == 0:
        after_child()
        return 0
    after_parent()
    return pid if pid > 0 else -1


@functools.cache
def _clone_calls() -> tuple[Any, Any, Any, Any]:
    """The C functions ``_clone`` calls, looked up once per process."""
    api = ctypes.pythonapi
    syscall = ctypes.PyDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    return api.PyOS_BeforeFork, api.PyOS_AfterFork_Parent, api.PyOS_AfterFork_Child, syscall


def _unshare(flags: int) -> bool:
    try:
        return _libc().unshare(flags) == 0
    except (OSError, AttributeError):
        return False


# ------------------------------------------------------------ warm worker
def configure(jobs_dir: str | None) -> Support:
    """Turn the sandbox on for the jobs of this worker (call before the first fork).

    ``jobs_dir``: an existing folder for the jobs' private folders (None: a new one in the
    system's temporary folder). The worker becomes a child subreaper: what a job leaves
    behind is re-parented to it, and ``end_adopted`` kills it."""
    global _config, _worker_pid
    facts = support()
    _worker_pid = os.getpid()
    if jobs_dir is None:
        jobs_dir = tempfile.mkdtemp(prefix="fxls-jobs-")
    _config = _Config(facts, jobs_dir)
    if facts.subreaper:
        _libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    return facts


def enabled() -> bool:
    return _config is not None


def end_adopted(own: Iterable[int]) -> list[int]:
    """Kill and reap the worker's children that are not in ``own`` (its job processes): they
    were re-parented to it when the job that started them ended. Returns their pids."""
    if _config is None:
        return []
    own_pids, ended = set(own), []
    for _ in range(20):  # each round may orphan the next generation
        strays = [pid for pid in _children() if pid not in own_pids]
        if not strays:
            break
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        ended += strays
    return ended


def _children() -> list[int]:
    """This process's children: /proc/self/task/*/children is fast; else scan /proc."""
    pids: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as handle:
                pids += [int(p) for p in handle.read().split()]
    except OSError:
        return child_pids(os.getpid())
    return pids


def job_ended(name: str) -> None:
    """Remove the private folder ``name`` of a job process that ended (``enter``)."""
    if _config is not None:
        shutil.rmtree(os.path.join(_config.jobs_dir, name), ignore_errors=True)


def job_folder(name: str) -> str | None:
    """The path of the private folder ``name`` of a job process (``enter``), as the worker
    sees it; None without the sandbox."""
    return os.path.join(_config.jobs_dir, name) if _config is not None else None


def new_jobs_dir() -> str:
    """A folder for one worker's job folders, named after this process (the worker's
    client); first removes those of clients that are gone (a server killed with SIGKILL
    cleans up nothing)."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        owner = name.removeprefix(_JOBS_DIR_PREFIX).partition("-")[0]
        if name.startswith(_JOBS_DIR_PREFIX) and owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{_JOBS_DIR_PREFIX}{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_jobs_dir() -> None:
    if _config is not None:
        shutil.rmtree(_config.jobs_dir, ignore_errors=True)


# -------------------------------------------------------------- idle child
def fork_job_process(network: bool = False, sibling: bool = False) -> int:
    """Fork a job process (``os.fork`` semantics). Where the kernel allows it, the child
    starts in new user + PID + mount namespaces: PID 1 there, still the worker's child; and,
    unless its job will be allowed the network, in a network namespace of its own (made
    here, off the job's clock, rather than when the job arrives).

    ``sibling``: the child becomes the caller's parent's child (``CLONE_PARENT``), as the
    zygote makes them for the worker; the caller must be single-threaded. -1 if the kernel
    refused.

    The clone skips the C library's at-fork handlers, which only a multi-threaded process
    needs (a BLAS thread pool that must be stopped before a fork, locks other threads may
    hold): a worker with more than one thread forks with ``os.fork`` and the child forks once
    more into the namespaces, staying behind as a relay (``_relay``)."""
    global _in_namespaces, _outer_ids, _network_isolated
    if _config is None or not _config.support.namespaces:
        return _clone(_CLONE_PARENT) if sibling else os.fork()
    _outer_ids = os.getuid(), os.getgid()
    own_network = not network and not (sibling and _siblings_share_isolation)
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS | (_CLONE_NEWNET if own_network else 0)
    if sibling:
        if network and _siblings_share_isolation:
            return -1  # this zygote has no network to give
        pid = _clone(flags | _CLONE_PARENT)
    else:
        pid = _clone(flags) if _wanted("CLONE") and _single_threaded() else -1
        if pid < 0:
            pid = os.fork()
            if pid == 0:
                if not _unshare(flags):
                    return 0  # no namespaces for this job: the subreaper and the guard remain
                _split_off_relay()
    if pid == 0:
        _in_namespaces, _network_isolated = True, not network
    return pid


def zygote_isolates_network() -> bool:
    """Whether a zygote started now moves into an empty network namespace that the job
    processes it forks share (``isolate_network_for_siblings``): jobs allowed the network
    come from another zygote then. Only where Landlock can scope abstract Unix sockets (ABI
    6): they belong to the network namespace, and jobs that share one could talk over them."""
    support = _config.support if _config is not None else None
    return support is not None and support.namespaces and support.landlock_abi >= 6


def isolate_network_for_siblings() -> bool:
    """In the zygote: move into a user namespace and an empty network namespace of its own,
    which the job processes it forks (no network) share. A network namespace per job cost
    ~1.4 ms of CPU (made at the clone, torn down by a kernel worker), and a shared one
    isolates as well: no interface is up, the jobs have no capability in it to change that,
    and Landlock keeps each job's abstract Unix sockets to itself. False if that failed."""
    global _siblings_share_isolation
    uid, gid = os.getuid(), os.getgid()
    if not zygote_isolates_network() or not _unshare(_CLONE_NEWUSER | _CLONE_NEWNET
                                                     | _CLONE_NEWNS):
        return False
    _map_ids(uid, gid)
    if (os.getuid(), os.getgid()) != (uid, gid) or not _hide_services(uid):
        return False
    _siblings_share_isolation = True
    return True


def can_fork_siblings() -> bool:
    """Whether a zygote can fork job processes here (``fork_job_process(sibling=True)``):
    the raw clone is known for this machine and wanted, and the caller is single-threaded
    (a zygote forked from a multi-threaded process would inherit locks held by threads it
    does not have)."""
    return (sys.platform.startswith("linux") and _SYS_CLONE is not None and _wanted("CLONE")
            and _single_threaded())


def _single_threaded() -> bool:
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _split_off_relay() -> None:
    """After ``unshare``: fork the job (PID 1 of the new namespaces) and stay behind as its
    relay; returns in the job."""
    pid = os.fork()
    if pid:
        _relay(pid)
    os.setsid()  # leave the relay's process group: the job signals only its own processes


def _relay(pid: int) -> NoReturn:
    """Wait for the job, pass the signals the worker sends it on, and exit as it did (the
    worker reads the job's CPU time from this process's: it includes the reaped job's)."""
    try:
        _libc().prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        os.closerange(3, 1 << 16)
        for signum in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda sig, _frame: _pass_on(pid, sig))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum not in (signal.SIGKILL, signal.SIGSTOP):  # these cannot be handled
                signal.signal(signum, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            os.kill(os.getpid(), signum)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 70)
    finally:
        os._exit(70)


def _pass_on(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def in_namespaces() -> bool:
    """This process is a job process PID 1 of its own namespaces."""
    return _in_namespaces


def enter(name: str) -> None:
    """In the freshly forked idle child: make the job's private folder ``name`` (in the
    worker's jobs folder; the worker removes it when the job ends) and, in namespaces, keep
    the user's ids and mount a /proc of its own."""
    global _job_dir, _socket_table
    if _config is None:
        return
    if _in_namespaces:
        _map_ids(*_outer_ids)  # first: an unmapped user can create no file
        _socket_table = mounts.open_socket_table(_worker_pid)  # before /proc is the job's
        _private_mounts(_outer_ids[0])
    _job_dir = os.path.join(_config.jobs_dir, name)
    os.mkdir(_job_dir, 0o700)


def _private_mounts(uid: int) -> None:
    """In the job's own mount namespace: a /proc of its PID namespace (it lists the job's
    processes only, not the worker's, the server's or their command lines), and the user's
    session services (D-Bus, systemd --user, X11...) and the system's service sockets out of
    reach: Landlock (up to ABI 7) does not cover connecting to Unix sockets, and those
    services would act outside the sandbox on the job's behalf."""
    if _siblings_share_isolation or _hide_services(uid):  # the zygote's mounts are copied
        _libc().mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


def _hide_services(uid: int) -> bool:
    """In a mount namespace of this process's own: its mounts private, the session services'
    sockets out of reach (``_private_mounts``). Done once by the zygote for all its jobs
    (their mount namespaces are copies of its, in which these mounts are locked: a job cannot
    unmount them), else by each job. False if the mounts cannot be made private."""
    libc = _libc()
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return False
    jobs_dir = _config.jobs_dir if _config is not None else ""
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{uid}"
    for folder in (runtime, "/tmp/.X11-unix"):
        inside = os.path.commonpath([os.path.abspath(folder), jobs_dir]) if jobs_dir else ""
        if os.path.isdir(folder) and inside != os.path.abspath(folder):
            libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                       b"mode=0700")
    for path in _SERVICE_SOCKETS:
        if os.path.exists(path):
            libc.mount(b"/dev/null", os.fsencode(path), None, _MS_BIND, None)
    return True


def _map_ids(uid: int, gid: int) -> None:
    """Keep the job's own uid and gid inside the namespace (else it sees 65534)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        try:
            fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        except OSError:
            continue
        try:
            os.write(fd, text.encode())
        except OSError:
            pass
        finally:
            os.close(fd)


# --------------------------------------------------------------------- job
def confine(policy: JobPolicy) -> None:
    """Apply the job's policy for the rest of this process, before any user code runs."""
    if _config is None or _job_dir is None:
        return
    jobenv.replace_environment(_job_dir, policy.env)
    tempfile.tempdir = _job_dir
    facts = _config.support
    writable = (_job_dir, *policy.write)
    if _in_namespaces:
        if not policy.network and not _network_isolated:
            _unshare(_CLONE_NEWNET)
        if policy.network and _network_isolated:
            raise RuntimeError("a job allowed the network reached a process without it")
        _enforce_cpu_limit()
        _read_only_file_system(writable)
    elif facts.seccomp:
        metadata_filter.refuse_metadata_changes()
    if facts.landlock_abi:
        landlock.restrict((*writable, *guard.ALWAYS_WRITABLE), network=policy.network,
                          abi=facts.landlock_abi)
    # abstract Unix sockets are the network namespace's: the job's own, or Landlock-scoped
    isolated = _in_namespaces and (not policy.network or facts.landlock_abi >= 6)
    guard.install(writable=writable, network=policy.network, abstract_unix=isolated)


def _read_only_file_system(writable: tuple[str, ...]) -> None:
    """In the job's mount namespace: the Unix sockets services listen on hidden, every mount
    read-only but ``writable``, and the mounts locked (``fxls.worker.mounts``)."""
    global _socket_table
    mounts.hide_listening_sockets(_socket_table, keep=writable)
    if _socket_table is not None:
        os.close(_socket_table)
        _socket_table = None
    mounts.read_only_except(writable)
    if not mounts.lock(*_outer_ids) and not _config_landlock():
        raise RuntimeError("the job's read-only mounts could not be locked")


def _config_landlock() -> bool:
    return _config is not None and _config.support.landlock_abi > 0


def _enforce_cpu_limit() -> None:
    """PID 1 of a namespace ignores SIGXCPU: the hard limit (SIGKILL) must end it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft + 1):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))


# ------------------------------------------------- the job's folder's size
def limit_private_folder(size_mb: int) -> bool:
    """In a job process in its own namespaces, before ``confine`` (Landlock forbids mounts):
    mount a tmpfs of ``size_mb`` on its private folder, in its own mount namespace only (the
    worker still sees the empty folder it made, and removes it). Writes beyond the size fail
    with ENOSPC. False where it cannot (no namespaces: the worker watches the folder's size
    instead)."""
    if not _in_namespaces or _job_dir is None or size_mb < 1:
        return False
    options = f"size={int(size_mb)}m,mode=0700".encode()
    return _libc().mount(b"tmpfs", os.fsencode(_job_dir), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                         options) == 0


def job_dir() -> str | None:
    """This job's private folder (None outside a sandboxed job)."""
    return _job_dir
