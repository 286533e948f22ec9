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
        if not folder or not os.path.isdir(folder):
            continue
        for root, dirs, filenames in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED
                             and not os.path.exists(os.path.join(root, d, "pyvenv.cfg")))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield os.path.join(root, name)


def _imports_of(path: str) -> set[str]:
    try:
        if os.path.getsize(path) > FILE_BYTES_LIMIT:
            return set()
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if alias.name != "*")
    return found
