"""The one-time installs that the editor and browser tests share: editors/vscode's
node_modules (`npm ci`) and Debian's chromium (`apt-get`). pytest runs on two xdist workers,
so each install is made under one lock file, which scripts/vscode-e2e.sh takes too: two
`npm ci` in one folder, or two `apt-get` at once, would break each other."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE = Path(tempfile.gettempdir()) / "fxls-editor-installs.lock"


@contextmanager
def installs_locked() -> Iterator[None]:
    """Held while a test checks for and makes an install (waits for whoever holds it)."""
    descriptor = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
