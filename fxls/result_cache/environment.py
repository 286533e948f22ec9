"""Which Python and libraries made a result: the interpreter that runs the analysed code,
its version, and the distributions installed where it imports from (torch's version among
them), as one digest per interpreter, computed once per process.

A distribution is named by its ``*.dist-info`` (or ``*.egg-info``) folder, which holds its
name and version (what ``importlib.metadata`` reads), and that folder's time: a reinstall
of the same version makes a new folder. Listing the folders costs one ``scandir`` per
``sys.path`` entry, never a read of each distribution's metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from functools import cache

from fxls.worker.import_origin import interpreter_folders

#: variables of fxls's own that change how the analysis runs (the sandbox's modes...);
#: the cache's own variables are not among them
_OWN_VARIABLES = "FXLS_"
_CACHE_VARIABLES = ("FXLS_CACHE_DIR", "FXLS_NO_CACHE", "FXLS_CACHE_MAX_MB")
_ASK_TIMEOUT_S = 30.0
#: what another interpreter is asked: its version and where it imports from
_ASK = "import json, sys; print(json.dumps([sys.version, sys.path]))"


@cache
def environment_digest(python: str) -> str | None:
    """The hex digest of the interpreter ``python`` and its installed libraries; None when
    ``python`` cannot be asked (then nothing is cached: the analysis says what is wrong)."""
    facts = _interpreter_facts(python)
    if facts is None:
        return None
    version, folders = facts
    digest = hashlib.sha256()
    for part in (os.path.realpath(python), version, os.environ.get("PYTHONPATH", ""),
                 *_own_variables(), *_distributions(folders)):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def _interpreter_facts(python: str) -> tuple[str, list[str]] | None:
    """``python``'s version and import folders; this process's own without a new process."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return sys.version, [*interpreter_folders(), *_python_path()]
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
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith((".dist-info", ".egg-info")):
                try:
                    when = entry.stat().st_mtime_ns
                except OSError:
                    when = 0
                found.append(f"{folder}/{entry.name}@{when}")
    return found
