"""Which files fxls looks at, and reading them as files.

A workspace is not trusted to hold only source files: a ``.py`` name may be a FIFO (a read
blocks for ever), a link to ``/dev/zero`` (a read never ends), a socket, or a symbolic-link
loop. Discovery keeps regular files only and says what it left out; :func:`read_regular_file`
is the one way fxls reads a workspace file: it refuses anything but a regular file before
opening it, never blocks on open, and reads at most :data:`MAX_SOURCE_BYTES`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

#: the largest source file fxls reads (and analyses)
MAX_SOURCE_BYTES = 8 << 20

SKIPPED_DIRS = {
    ".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", "build", "dist",
    ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
}

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class SkippedFile(OSError):
    """A path that is not a file to read: not a regular file (a FIFO, a socket, a device, a
    folder), a symbolic-link loop or a broken link. ``reason`` says which, for the user."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class FileTooLarge(OSError):
    """A regular file over the size fxls reads."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        self.path, self.size, self.limit = path, size, limit
        self.reason = (f"the file is {_megabytes(size)}, over the {_megabytes(limit)} fxls "
                       "reads: it was not checked")
        super().__init__(f"{path}: {self.reason}")


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    reason: str


@dataclass(slots=True)
class Discovery:
    """The regular ``.py`` files found (as the user named them, in order) and what was
    left out."""

    files: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def read_regular_file(path: str | os.PathLike[str], limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (symbolic links followed).

    Raises :class:`SkippedFile` for anything else (without opening it: opening a device can
    have effects), :class:`FileTooLarge` beyond ``limit`` bytes, OSError otherwise. The open
    cannot block (``O_NONBLOCK``: a FIFO swapped in after the check opens at once and is
    refused by ``fstat``) and the read is bounded, also for a file that grows meanwhile.
    """
    name = os.fspath(path)
    _require_regular(name, _stat(name))
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        _require_regular(name, info)
        if info.st_size > limit:
            raise FileTooLarge(name, info.st_size, limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise FileTooLarge(name, os.fstat(fd).st_size, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def skip_reason(path: str) -> str | None:
    """Why ``path`` is not a file to read (see :class:`SkippedFile`), or None for a
    regular file (or one that cannot be looked at: reading it will say why)."""
    try:
        _require_regular(path, _stat(path))
    except SkippedFile as error:
        return error.reason
    except OSError:
        return None
    return None


def _stat(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SkippedFile(path, "a symbolic link loop") from error
        if error.errno == errno.ENOENT and os.path.islink(path):
            raise SkippedFile(path, f"a broken symbolic link (to {os.readlink(path)})") \
                from error
        raise


def _require_regular(path: str, info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
    if os.path.islink(path) and kind.endswith("device"):
        kind += f" ({os.path.realpath(path)})"
    raise SkippedFile(path, f"{kind}, not a regular file")


def collect_python_files(paths: Iterable[str]) -> list[str]:
    """The regular ``.py`` files under ``paths`` (see :func:`find_python_files`)."""
    return find_python_files(paths).files


def find_python_files(paths: Iterable[str], suffixes: tuple[str, ...] = (".py",)
                      ) -> Discovery:
    """Expand folders into their files ending in ``suffixes`` (sorted), keeping files as
    given; names that are not regular files are left out and listed in ``skipped``.

    Paths keep the form the user gave them, so reports name files the way the user did.
    Folders reached through a symbolic link are not entered (a link to ``/`` would walk the
    disk).
    """
    found = Discovery()
    for given in paths:
        if os.path.isdir(given):
            found.files.extend(walk_python_files(given, SKIPPED_DIRS, found.skipped,
                                                 suffixes))
            continue
        reason = skip_reason(given)
        if reason is None:
            found.files.append(given)
        else:
            found.skipped.append(Skipped(given, reason))
    found.files = list(dict.fromkeys(found.files))
    return found


def walk_python_files(root: str, skipped_dirs: Iterable[str],
                      skipped: list[Skipped] | None = None,
                      suffixes: tuple[str, ...] = (".py",)) -> Iterator[str]:
    """The regular files ending in ``suffixes`` (``.py``) under ``root``, folder by folder in
    sorted order; hidden folders (``.ipynb_checkpoints`` too), ``skipped_dirs`` and virtual
    environments (a ``pyvenv.cfg``) are not entered. Names that are not regular files are
    appended to ``skipped``."""
    excluded = set(skipped_dirs)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs
            if d not in excluded and not d.startswith(".")
            and not os.path.lexists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        for name in sorted(files):
            if not name.endswith(suffixes):
                continue
            path = os.path.join(folder, name)
            reason = skip_reason(path)
            if reason is None:
                yield path
            elif skipped is not None:
                skipped.append(Skipped(path, reason))


def _megabytes(size: int) -> str:
    return f"{size / (1 << 20):.0f} MB" if size % (1 << 20) == 0 else \
        f"{size / (1 << 20):.1f} MB"
