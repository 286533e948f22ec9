"""The job's Python-level guard: writes and metadata changes (mode, owner, times, extended
attributes, links) outside the allowed folders, connections to Unix sockets outside them and
network access fail at once with a message that says how to allow them, and each refusal is
recorded with the stack that tried (``refusals``), so the analysis can point at the user's
line.

An audit hook (PEP 578) sees every ``open``, ``os.mkdir``, ``os.chmod``, ``socket.connect``...
made through Python. It is a guide, not a barrier: C code and subprocesses bypass it. The
barrier is the kernel's (``fxls.worker.sandbox``: read-only mounts, Landlock, a network
namespace, or a seccomp filter), where there is one.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

NETWORK_MESSAGE = ("fxls refuses network access while analysing (allow it with "
                   "`fxls check --allow-network` or the editor setting `fxls.allowNetwork`)")
#: how to allow a folder: a repository's pyproject.toml only inside its root (fxls.project.settings)
HOW_TO_ALLOW_WRITE = ("add the folder to `allow_write` in [tool.fxls] if it is inside the project, "
                      "else `fxls check --allow-write DIR` or the editor setting `fxls.allowWrite`")
WRITE_MESSAGE = ("fxls refuses writes outside the job's temporary folder while analysing "
                 f"({HOW_TO_ALLOW_WRITE})")
METADATA_MESSAGE = ("fxls refuses changes to files outside the job's temporary folder while "
                    f"analysing ({HOW_TO_ALLOW_WRITE})")
SOCKET_MESSAGE = ("fxls refuses connections to Unix sockets outside the job's temporary folder "
                  "while analysing: services there would act outside the sandbox")
#: writable for every job: discarding output must work
ALWAYS_WRITABLE = ("/dev/null",)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_INTERNET = (socket.AF_INET, socket.AF_INET6)
_MAX_FRAMES = 40


class NetworkRefused(ConnectionRefusedError):
    pass


@dataclass(slots=True)
class Refusal:
    kind: str  # "write" | "metadata" | "socket" | "network"
    target: str  # the path or address
    #: the stack that tried, innermost first: (file, line, end_line, col, end_col)
    frames: list[tuple[str, int, int, int, int]] = field(default_factory=list)
    #: for "metadata": what was to change ("mode", "owner", "times", "extended attributes")
    detail: str = ""


#: what this process was refused so far
refusals: list[Refusal] = []
_installed: list[_Guard] = []


@dataclass(slots=True)
class _Guard:
    writable: tuple[str, ...] | None  # None: writes are not guarded
    network: bool
    #: abstract Unix sockets reach services outside (no network namespace of the job's own)
    abstract_unix: bool = True


def install(*, writable: Iterable[str] | None, network: bool, abstract_unix: bool = True) -> bool:
    """Guard this process (for good: audit hooks cannot be removed). ``writable`` are the
    folders writes, metadata changes and Unix socket connections may go to (None: any).
    ``abstract_unix``: connections to abstract Unix sockets are allowed (the kernel keeps
    them to the job). False when a guard was installed already."""
    if _installed:
        return False
    roots = None if writable is None else tuple(_real(p) for p in (*writable, *ALWAYS_WRITABLE))
    guard = _Guard(roots, network, abstract_unix)
    _installed.append(guard)
    if roots is not None:
        sys.dont_write_bytecode = True  # bytecode caches are writes the user never asked for
    sys.addaudithook(_make_hook(guard))
    return True


def installed() -> bool:
    return bool(_installed)


def _make_hook(guard: _Guard) -> Any:
    write_events = _WRITE_EVENTS if guard.writable is not None else {}
    metadata_events = _METADATA_EVENTS if guard.writable is not None else {}
    unix_events = _UNIX_EVENTS if guard.writable is not None else {}
    network_events = {} if guard.network else _NETWORK_EVENTS

    def hook(event: str, args: tuple[Any, ...]) -> None:
        paths = write_events.get(event)
        if paths is not None:
            for path in paths(args):
                if not _allowed(path, guard.writable or ()):
                    _refuse("write", path)
                    raise PermissionError(errno.EACCES, WRITE_MESSAGE, path)
            return
        metadata = metadata_events.get(event)
        if metadata is not None:
            what, dir_fd = metadata
            target = _target(args[0], args[dir_fd] if dir_fd is not None else None)
            if target is not None and not _allowed(target, guard.writable or ()):
                _refuse("metadata", target, what)
                raise PermissionError(errno.EPERM, METADATA_MESSAGE, target)
            return
        unix = unix_events.get(event)
        path = _unix_path(args[0], args[1]) if unix is not None else None
        if path is not None:
            shown = None
            if not path and not guard.abstract_unix and unix == "socket":
                shown = "@" + os.fsdecode(args[1])[1:]
            elif path and not _allowed(path, guard.writable or ()):
                shown = path
            if shown is not None:
                kind = unix or "socket"
                _refuse(kind, shown)
                raise PermissionError(errno.EACCES, SOCKET_MESSAGE if kind == "socket"
                                      else WRITE_MESSAGE, shown)
            return
        address = network_events.get(event)
        if address is not None:
            target = address(args)
            if target is not None:
                _refuse("network", target)
                raise NetworkRefused(NETWORK_MESSAGE)

    return hook


def _refuse(kind: str, target: str, detail: str = "") -> None:
    refusals.append(Refusal(kind, target, _stack(sys._getframe(2)), detail))


def _stack(frame: FrameType | None) -> list[tuple[str, int, int, int, int]]:
    frames = []
    while frame is not None and len(frames) < _MAX_FRAMES:
        code = frame.f_code
        position = None
        if frame.f_lasti >= 0:
            position = list(code.co_positions())[frame.f_lasti // 2]
        line, end_line, col, end_col = position or (frame.f_lineno, None, None, None)
        if line is not None:
            frames.append((code.co_filename, line, end_line or line, col or 0,
                           end_col if end_col is not None else 0))
        frame = frame.f_back
    return frames


def _allowed(path: str, roots: tuple[str, ...]) -> bool:
    real = _real(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


# ------------------------------------------------------------------ events
def _path(value: Any, dir_fd: Any = None) -> list[str]:
    if isinstance(value, int) or value is None:
        return []  # an open file descriptor: it was allowed when it was opened
    try:
        text = os.fsdecode(value)
    except TypeError:
        return []
    if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(text):
        try:
            text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
        except OSError:
            pass
    return [text]


def _new(paths: list[str]) -> list[str]:
    """Creating what exists fails anyway, with the error the code expects (``exist_ok``)."""
    return [path for path in paths if not os.path.lexists(path)]


def _open_paths(args: tuple[Any, ...]) -> list[str]:
    path, mode, flags = (*args, None, None, None)[:3]
    if isinstance(mode, str):
        writes = any(c in mode for c in "wax+")
    else:
        writes = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    return _path(path) if writes else []


def _two_paths(args: tuple[Any, ...]) -> list[str]:
    source, target = args[0], args[1]
    dir_fds = (*args[2:4], None, None)
    return [*_path(source, dir_fds[0]), *_path(target, dir_fds[1])]


def _target(value: Any, dir_fd: Any) -> str | None:
    """The file a metadata change is about: a path, or the file an open descriptor is of."""
    if isinstance(value, int):
        try:
            return os.readlink(f"/proc/self/fd/{value}")
        except OSError:
            return None
    paths = _path(value, dir_fd)
    return paths[0] if paths else None


def _unix_path(sock: Any, address: Any) -> str | None:
    """A Unix socket's path ("" when abstract); None for other sockets."""
    if getattr(sock, "family", None) != socket.AF_UNIX or isinstance(address, int):
        return None
    try:
        text = os.fsdecode(address)
    except TypeError:
        return None
    return "" if not text or text.startswith("\0") else text


_WRITE_EVENTS = {
    "open": _open_paths,
    "os.mkdir": lambda a: _new(_path(a[0], a[2] if len(a) > 2 else None)),
    "os.rmdir": lambda a: _path(a[0], a[1] if len(a) > 1 else None),
    "os.remove": lambda a: _path(a[0], a[1] if len(a) > 1 else None),
    "os.rename": _two_paths,
    "os.link": _two_paths,
    "os.symlink": lambda a: _path(a[1], a[2] if len(a) > 2 else None),
    "os.truncate": lambda a: _path(a[0]),
    "os.mkfifo": lambda a: _path(a[0], a[2] if len(a) > 2 else None),
    "os.mknod": lambda a: _path(a[0], a[3] if len(a) > 3 else None),
}


#: metadata changes: what changes, and where the event's ``dir_fd`` is (its first argument
#: is the path or an open descriptor)
_METADATA_EVENTS: dict[str, tuple[str, int | None]] = {
    "os.chmod": ("mode", 2),
    "os.chflags": ("flags", None),
    "os.chown": ("owner", 3),
    "os.utime": ("times", 3),
    "os.setxattr": ("extended attributes", None),
    "os.removexattr": ("extended attributes", None),
}
#: Unix sockets: connecting reaches a service ("socket"), binding makes a file ("write")
_UNIX_EVENTS = {"socket.connect": "socket", "socket.sendto": "socket", "socket.bind": "write"}


def _internet(sock: Any, address: Any) -> str | None:
    if getattr(sock, "family", None) not in _INTERNET:
        return None  # Unix sockets stay usable
    return repr(address)


_NETWORK_EVENTS = {
    "socket.connect": lambda a: _internet(a[0], a[1]),
    "socket.sendto": lambda a: _internet(a[0], a[1]),
    "socket.getaddrinfo": lambda a: f"{a[0]}:{a[1]}",
    "socket.gethostbyname": lambda a: str(a[0]),
    "socket.gethostbyname_ex": lambda a: str(a[0]),
    "socket.gethostbyaddr": lambda a: str(a[0]),
}
