"""A job's file system, made read-only in its own mount namespace (Linux): no change to any
file outside its private folder and the folders its policy allows, metadata included (mode,
owner, times, extended attributes, links: Landlock does not cover these), and the Unix sockets
that services listen on out of reach.

Called by ``fxls.worker.sandbox`` in a job process that is in user + mount namespaces of its
own (it has the capabilities there to change its mounts, and nobody else sees them):

- ``hide_listening_sockets``: every Unix socket file that a process of the worker's network
  namespace listens on (``/proc/<worker>/net/unix``, opened before the job's own /proc hid
  the worker's) gets ``/dev/null`` bound over it: connecting fails (``ECONNREFUSED``).
  Connecting to a Unix socket needs only write permission on the socket file, which a
  read-only mount does not take away.
- ``read_only_except``: every mount read-only (``mount_setattr(MOUNT_ATTR_RDONLY,
  AT_RECURSIVE)``, Linux >= 5.12; else a ``MS_REMOUNT | MS_BIND | MS_RDONLY`` per mount), then
  the writable folders bound onto themselves writable again; the job's own /proc stays
  writable (``/proc/self/uid_map``).
- ``lock``: the job moves into a nested user + mount namespace: its mounts were copied from a
  more privileged namespace, so the kernel locks them (read-only stays, nothing can be
  unmounted to uncover what was hidden), even where Landlock (which also forbids mount
  changes) is absent.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Iterable

_SYS_MOUNT_SETATTR = 442  # shared by every architecture for syscalls this recent
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_NOATIME, _MS_NODIRATIME, _MS_BIND, _MS_REC = 32, 1024, 2048, 4096, 1 << 14
_MS_RELATIME, _MS_STRICTATIME = 1 << 21, 1 << 24
_OPTION_FLAGS = {"ro": _MS_RDONLY, "nosuid": _MS_NOSUID, "nodev": _MS_NODEV,
                 "noexec": _MS_NOEXEC, "noatime": _MS_NOATIME, "nodiratime": _MS_NODIRATIME,
                 "relatime": _MS_RELATIME, "strictatime": _MS_STRICTATIME}
_CLONE_NEWUSER, _CLONE_NEWNS = 0x10000000, 0x00020000


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}")


# ----------------------------------------------------------------- sockets
def open_socket_table(worker_pid: int) -> int | None:
    """An open descriptor on the worker's network namespace's table of Unix sockets (read it
    again later with ``hide_listening_sockets``); None where /proc does not give it."""
    try:
        return os.open(f"/proc/{worker_pid}/net/unix", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def socket_paths(table_fd: int) -> list[str]:
    """The absolute paths of the Unix sockets in the table (read afresh from its start)."""
    os.lseek(table_fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(table_fd, 1 << 16):
        chunks.append(chunk)
    paths = []
    for line in b"".join(chunks).splitlines()[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            paths.append(os.fsdecode(fields[7]))
    return list(dict.fromkeys(paths))


def hide_listening_sockets(table_fd: int | None, keep: Iterable[str] = ()) -> list[str]:
    """Bind /dev/null over each socket file of the table outside ``keep``; returns them."""
    if table_fd is None:
        return []
    kept = tuple(os.path.realpath(path).rstrip("/") + "/" for path in keep)
    libc, hidden = _libc(), []
    for path in socket_paths(table_fd):
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:
            continue  # gone, or hidden already (a folder over-mounted)
        if os.path.realpath(path).startswith(kept):
            continue
        if libc.mount(b"/dev/null", os.fsencode(path), None, _MS_BIND, None) == 0:
            hidden.append(path)
    return hidden


# ------------------------------------------------------------------ mounts
def read_only_except(writable: Iterable[str]) -> None:
    """Every mount read-only, except the folders (or files) ``writable`` and /proc.
    Raises OSError if the kernel refused."""
    folders = [path for path in dict.fromkeys(writable) if os.path.exists(path)]
    if any(os.path.realpath(path) == "/" for path in folders):
        # everything stays as writable as it is outside the job (a bind onto "/" would not
        # even be seen: a process's root stays the mount below it)
        return
    if not _set_attr("/", _MOUNT_ATTR_RDONLY, 0, recursive=True):
        _remount_each_read_only()
    _set_attr("/proc", 0, _MOUNT_ATTR_RDONLY, recursive=False)  # the job's own /proc
    libc = _libc()
    for path in folders:
        target = os.fsencode(path)
        if libc.mount(target, target, None, _MS_BIND | _MS_REC, None) != 0:
            raise _error(f"mount --rbind {path}")
        if not _make_writable(path):
            flags = _mount_flags(path)
            if libc.mount(None, target, None, _MS_REMOUNT | _MS_BIND | flags, None) != 0:
                raise _error(f"mount -o remount,rw {path}")


def _make_writable(path: str) -> bool:
    """Clear read-only on the mounts at and below ``path``; False where the kernel lacks
    ``mount_setattr``. A mount below that was read-only before the job (its flag locked,
    e.g. a read-only /sys under an allowed "/sys/..."'s parent) stays read-only."""
    try:
        return _set_attr(path, 0, _MOUNT_ATTR_RDONLY, recursive=True)
    except PermissionError:
        pass
    if not _set_attr(path, 0, _MOUNT_ATTR_RDONLY, recursive=False):
        return False
    below = path.rstrip("/") + "/"
    for point, _flags in _mounts():
        if point.startswith(below):
            try:
                _set_attr(point, 0, _MOUNT_ATTR_RDONLY, recursive=False)
            except PermissionError:
                pass  # locked read-only: it was read-only for the user too
    return True


def _set_attr(path: str, set_: int, clear: int, *, recursive: bool) -> bool:
    """``mount_setattr``; False where the kernel lacks it (< 5.12); raises if it refused."""
    if os.environ.get("FXLS_SANDBOX_MOUNT_SETATTR", "1") == "0":
        return False  # test the older kernels' way
    attr = _MountAttr(set_, clear, 0, 0)
    result = _libc().syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), os.fsencode(path),
                             ctypes.c_uint(_AT_RECURSIVE if recursive else 0),
                             ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if result == 0:
        return True
    if ctypes.get_errno() == 38:  # ENOSYS
        return False
    raise _error(f"mount_setattr({path})")


def _mounts() -> list[tuple[str, int]]:
    """This namespace's mount points, parents first, with their per-mount flags."""
    found = []
    with open("/proc/self/mountinfo", "rb") as handle:
        for line in handle:
            fields = line.split()
            point = fields[4].decode("unicode_escape").encode("latin-1")
            flags = 0
            for option in fields[5].split(b","):
                flags |= _OPTION_FLAGS.get(option.decode(), 0)
            found.append((os.fsdecode(point), flags))
    return found


def _mount_flags(path: str) -> int:
    """The per-mount flags (nosuid, nodev...) of the mount at ``path``, read-only cleared:
    a remount must repeat the flags the kernel locked."""
    flags = 0
    for point, mount_flags in _mounts():
        if point == path:
            flags = mount_flags
    return flags & ~_MS_RDONLY


def _remount_each_read_only() -> None:
    """Kernels without ``mount_setattr``: remount each mount read-only, keeping its flags."""
    libc = _libc()
    for point, flags in _mounts():
        if flags & _MS_RDONLY or point == "/proc":
            continue
        done = libc.mount(None, os.fsencode(point), None,
                          _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, None) == 0
        if not done and ctypes.get_errno() not in (2, 13):  # ENOENT, EACCES: covered mounts
            raise _error(f"mount -o remount,ro {point}")


# ------------------------------------------------------------------- lock
def lock(uid: int, gid: int) -> bool:
    """Move into a nested user + mount namespace (mounts locked: see the module's doc),
    keeping ``uid`` and ``gid``. False if the kernel refused (e.g. more than one thread)."""
    if _libc().unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        except OSError:
            pass
    return True
