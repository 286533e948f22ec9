"""The job's Python-level guard: writes outside the allowed folders and network access fail
at once with a message that says how to allow them, and each refusal is recorded with the
stack that tried (``refusals``), so the analysis can point at the user's line.

An audit hook (PEP 578) sees every ``open``, ``os.mkdir``, ``socket.connect``... made through
Python. It is a guide, not a barrier: C code and subprocesses bypass it. The barrier is the
kernel's (``fxls.worker.sandbox``: Landlock and a network namespace), where there is one.
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

NETWORK_MESSAGE = ("fxls refuses network access while analysing (set `allow_network = true` "
                   "in [tool.fxls] to allow it)")
WRITE_MESSAGE = ("fxls refuses writes outside the job's temporary folder while analysing "
                 "(add the folder to `allow_write` in [tool.fxls] to allow it)")
#: writable for every job: discarding output must work
ALWAYS_WRITABLE = ("/dev/null",)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_INTERNET = (socket.AF_INET, socket.AF_INET6)
_MAX_FRAMES = 40


class NetworkRefused(ConnectionRefusedError):
    pass


@dataclass(slots=True)
class Refusal:
    kind: str  # "write" | "network"
    target: str  # the path or address
    #: the stack that tried, innermost first: (file, line, end_line, col, end_col)
    frames: list[tuple[str, int, int, int, int]] = field(default_factory=list)


#: what this process was refused so far
refusals: list[Refusal] = []
_installed: list[_Guard] = []


@dataclass(slots=True)
class _Guard:
    writable: tuple[str, ...] | None  # None: writes are not guarded
    network: bool


def install(*, writable: Iterable[str] | None, network: bool) -> bool:
    """Guard this process (for good: audit hooks cannot be removed). ``writable`` are the
    folders writes may go to (None: any). False when a guard was installed already."""
    if _installed:
        return False
    roots = None if writable is None else tuple(_real(p) for p in (*writable, *ALWAYS_WRITABLE))
    guard = _Guard(roots, network)
    _installed.append(guard)
    if roots is not None:
        sys.dont_write_bytecode = True  # bytecode caches are writes the user never asked for
    sys.addaudithook(_make_hook(guard))
    return True


def installed() -> bool:
    return bool(_installed)


def _make_hook(guard: _Guard) -> Any:
    write_events = _WRITE_EVENTS if guard.writable is not None else {}
    network_events = {} if guard.network else _NETWORK_EVENTS

    def hook(event: str, args: tuple[Any, ...]) -> None:
        paths = write_events.get(event)
        if paths is not None:
            for path in paths(args):
                if not _allowed(path, guard.writable or ()):
                    _refuse("write", path)
                    raise PermissionError(errno.EACCES, WRITE_MESSAGE, path)
            return
        address = network_events.get(event)
        if address is not None:
            target = address(args)
            if target is not None:
                _refuse("network", target)
                raise NetworkRefused(NETWORK_MESSAGE)

    return hook


def _refuse(kind: str, target: str) -> None:
    refusals.append(Refusal(kind, target, _stack(sys._getframe(2))))


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
