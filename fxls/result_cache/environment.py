"""Which Python and libraries made a result: the interpreter that runs the analysed code,
its version, and the distributions installed where it imports from (torch's version among
them), as one digest.

A distribution is named by its ``*.dist-info`` (or ``*.egg-info``) folder, which holds its
name and version (what ``importlib.metadata`` reads), and that folder's time: a reinstall
of the same version makes a new folder. An install or removal changes the time of the
folder it is in, so a folder is listed again only then: a digest costs a ``stat`` per
``sys.path`` entry (a long-lived server stays right after a ``pip install``), never a read
of each distribution's metadata. The interpreter is asked for its version and path once.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import cache, lru_cache

from fxls.worker.import_origin import interpreter_folders

#: variables of fxls's own that change how the analysis runs (the sandbox's modes...);
#: the cache's own variables are not among them
_OWN_VARIABLES = "FXLS_"
_CACHE_VARIABLES = ("FXLS_CACHE_DIR", "FXLS_NO_CACHE", "FXLS_CACHE_MAX_MB")
_ASK_TIMEOUT_S = 30.0
#: what another interpreter is asked: its version and where it imports from
_ASK = "import json, sys; print(json.dumps([sys.version, sys.path]))"


def environment_digest(python: str) -> str | None:
    """The hex digest of the interpreter ``python`` and its installed libraries; None when
    ``python`` cannot be asked (then nothing is cached: the analysis says what is wrong)."""
    facts = _interpreter_facts(python)
    if facts is None:
        return None
    version, folders = facts
    digest = hashlib.sha256()
    for part in (os.path.realpath(python), version, os.environ.get("PYTHONPATH", ""),
                 *_own_variables(), *_distributions([*folders, *_python_path()])):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


@cache
def _interpreter_facts(python: str) -> tuple[str, list[str]] | None:
    """``python``'s version and import folders (PYTHONPATH's are added by the caller: it may
    change in a long-lived process); this process's own without a new process."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return sys.version, interpreter_folders()
    try:
        done = subprocess.run([python, "-P", "-c", _ASK], capture_output=True, text=True,
                              timeout=_ASK_TIMEOUT_S, check=True)
        version, folders = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return str(version), [str(folder) for folder in folders]


def _python_path() -> list[str]:
    """The absolute PYTHONPATH entries, which the worker puts on its jobs' ``sys.path``."""
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)]


def _own_variables() -> list[str]:
    return sorted(f"{name}={value}" for name, value in os.environ.items()
                  if name.startswith(_OWN_VARIABLES) and name not in _CACHE_VARIABLES)


def _distributions(folders: list[str]) -> list[str]:
    """``folder/name-version.dist-info@time`` for every distribution in ``folders``."""
    found = []
    for folder in dict.fromkeys(folders):
        try:
            changed = os.stat(folder).st_mtime_ns
        except OSError:
            continue
        found.extend(_listed(folder, changed))
    return found


@lru_cache(maxsize=256)
def _listed(folder: str, changed: int) -> tuple[str, ...]:
    """The distributions in ``folder`` as it was at its time ``changed``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return ()
    found = []
    for entry in entries:
        if entry.name.endswith((".dist-info", ".egg-info")):
            try:
                when = entry.stat().st_mtime_ns
            except OSError:
                when = 0
            found.append(f"{folder}/{entry.name}@{when}")
    return tuple(found)
