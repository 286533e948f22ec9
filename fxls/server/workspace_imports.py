"""What a workspace's Python files import, read without running them (``ast``), so that the
worker can learn those libraries before the first file is opened (``WorkerClient.warm``).

Bounded: at most ``FILES_LIMIT`` files of at most ``FILE_BYTES_LIMIT`` each, ``TIME_LIMIT_S``
in all; virtual environments, version control and build folders are skipped. The names are
hints only: the worker checks each one (``fxls.worker.libraries``).
"""

from __future__ import annotations

import ast
import os
import time
from collections.abc import Iterable

from fxls.project.files import read_regular_file, walk_python_files

FILES_LIMIT = 2000
FILE_BYTES_LIMIT = 1 << 20
TIME_LIMIT_S = 2.0
NAMES_LIMIT = 2000
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages", "build", "dist",
                      "venv", "env", "htmlcov"})


def workspace_imports(folders: Iterable[str]) -> list[str]:
    """The modules the Python files under ``folders`` import (absolute imports; for
    ``from a.b import c`` both ``a.b`` and ``a.b.c``, which may be a submodule)."""
    deadline = time.monotonic() + TIME_LIMIT_S
    names: set[str] = set()
    for count, path in enumerate(_python_files(folders)):
        if count >= FILES_LIMIT or time.monotonic() > deadline or len(names) >= NAMES_LIMIT:
            break
        names.update(_imports_of(path))
    return sorted(names)[:NAMES_LIMIT]


def _python_files(folders: Iterable[str]) -> Iterable[str]:
    for folder in folders:
        if folder and os.path.isdir(folder):
            yield from walk_python_files(folder, _SKIPPED)


def _imports_of(path: str) -> set[str]:
    try:
        # a regular file only, never blocking (a FIFO named *.py would hold this thread,
        # and the server's exit waits for it)
        tree = ast.parse(read_regular_file(path, FILE_BYTES_LIMIT), path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # deep nesting makes the parser give up with the last two
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if alias.name != "*")
    return found
