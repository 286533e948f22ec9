"""The workspace files an analysis read besides the analysed file, with their digests: the
modules it imported from the workspace and the files it opened for reading. The result
cache finds a file's static dependencies from its text (``result_cache.dependencies``); a
module imported by a computed name or a data file the model opens are seen only here, and
a cached result whose reads changed is stale."""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from fxls.project.files import read_regular_file

#: more files read than this: the result is not cached (a file too few would be stale)
MAX_FILES = 1000
_MAX_BYTES = 64 << 20
_SITE_MARKERS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


class FilesRead:
    """Watches one job's process (an audit hook: it stays until the process ends)."""

    def __init__(self, analysed: str, root: str) -> None:
        self._analysed = os.path.realpath(analysed)
        self._root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self._opened: set[str] = set()
        self._modules_before = set(sys.modules)

    def watch(self) -> None:
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event != "open":
            return
        try:  # never raise into the code that opened the file
            path, mode = args[0], args[1] if len(args) > 1 else "r"
            if isinstance(path, str) and (mode is None or (
                    isinstance(mode, str) and not set(mode) & set("wax+"))):
                self._opened.add(path)
        except Exception:
            pass

    def digests(self) -> dict[str, str] | None:
        """Each workspace file read (but the analysed one): the hex digest of its bytes;
        None when they are too many, or one cannot be read."""
        paths = {*self._opened, *(
            file for name, module in list(sys.modules.items())
            if name not in self._modules_before
            and isinstance(file := getattr(module, "__file__", None), str))}
        found: dict[str, str] = {}
        for path in sorted(paths):
            real = os.path.realpath(path)
            if (real == self._analysed or not real.startswith(self._root)
                    or any(marker in real for marker in _SITE_MARKERS)
                    or real in found or not os.path.isfile(real)):
                continue
            if len(found) >= MAX_FILES:
                return None
            digest = file_digest(real)
            if digest is None:
                return None
            found[real] = digest
        return found


def file_digest(path: str) -> str | None:
    """The sha256 hex digest of a regular file's bytes (None: no regular file, unreadable or
    too big; a FIFO or a device is never opened: the path may come from a report)."""
    if not os.path.isabs(path):
        return None
    try:
        data = read_regular_file(path, _MAX_BYTES)
    except OSError:  # SkippedFile, FileTooLarge too
        return None
    return hashlib.sha256(data).hexdigest()
