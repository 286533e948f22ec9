"""Which fxls made a result: a digest of fxls's and fxcore's own source files.

A version number does not change between two commits, and a development checkout edits
code under the same number; file sizes and times differ between clones of the same commit.
The bytes of every ``.py`` file do neither (1.6 MB, a few tens of ms, once per process).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache

#: the packages whose code makes a report (found, never imported: fxcore is not the CLI's)
PACKAGES = ("fxls", "fxcore")


@cache
def code_digest() -> str:
    """The hex digest of the source files of ``fxls`` and ``fxcore`` (names and bytes)."""
    folders = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        folders.append(os.path.dirname(os.path.abspath(spec.origin if spec and spec.origin
                                                       else "")))
    return sources_digest(folders)


def sources_digest(folders: list[str]) -> str:
    """The hex digest of the ``.py`` files below ``folders``: their names and bytes."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in _python_files(folder):
            digest.update(os.path.relpath(path, folder).encode() + b"\0")
            with open(path, "rb") as handle:
                digest.update(handle.read())
            digest.update(b"\0")
    return digest.hexdigest()


def _python_files(folder: str) -> list[str]:
    found = []
    for parent, folders, names in os.walk(folder):
        folders[:] = sorted(name for name in folders if name != "__pycache__")
        found.extend(os.path.join(parent, name) for name in sorted(names)
                     if name.endswith(".py"))
    return found
