"""Which files ``fxls check`` looks at: Python files under the given paths."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SKIPPED_DIRS = {
    ".git", ".hg", ".venv", "venv", "env", "__pycache__", "node_modules", "build", "dist",
    ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
}


def collect_python_files(paths: Iterable[str]) -> list[str]:
    """Expand folders into their ``.py`` files (sorted), keeping files as given.

    Paths keep the form the user gave them, so reports name files the way the user did.
    """
    found: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
                found.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
        else:
            found.append(given)
    return list(dict.fromkeys(found))
