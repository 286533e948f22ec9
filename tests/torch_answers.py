"""Torch's own answers for the differential tests, computed once per inputs and kept.

A reference script (``torch_reference.py``, ``zoo_targets/torch_says.py``,
``benchmarks/torchfx_one_by_one.py``) runs torch itself in a plain process on a case file;
its answer depends on nothing but the interpreter, the installed packages (torch and, with
``PYTHONPATH``, the model zoo) and the files it reads. ``torch_answer`` runs it and keeps its
standard output under ``~/.cache/fxls-torch-answers``, keyed by all of those; an unchanged
key gives the kept answer (torch's, from an earlier run on this machine) instead of minutes of
export, dynamo and one-by-one tracing. Any change of torch, the zoo, a reference script or a
case file computes it again. ``FXLS_TORCH_ANSWERS=fresh`` always computes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("FXLS_TORCH_ANSWERS_DIR", "~/.cache/fxls-torch-answers")).expanduser()


def torch_answer(command: Sequence[str], reads: Sequence[Path], *, cwd: Path,
                 env: dict[str, str] | None = None, timeout: float = 1200,
                 written_to: Path | None = None) -> str:
    """``command``'s standard output (or the file it writes, ``written_to``; it must exit
    0), from the cache when the same command has run on the same files with the same
    packages. ``reads`` are every file of ours the
    answer depends on (the reference script, the case files), keyed by their contents; the
    command is keyed without the paths of ``cwd``, the checkout and its interpreter (each run
    copies the case into a new temporary folder, CI clones the checkout anew)."""
    key = _key(command, reads, cwd, env)
    kept = CACHE / f"{key}.out"
    if os.environ.get("FXLS_TORCH_ANSWERS") != "fresh" and kept.is_file():
        return kept.read_text(encoding="utf-8")
    done = subprocess.run(list(command), capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    answer = done.stdout if written_to is None else written_to.read_text(encoding="utf-8")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = kept.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(answer, encoding="utf-8")
    partial.replace(kept)
    return answer


def _key(command: Sequence[str], reads: Sequence[Path], cwd: Path,
         env: dict[str, str] | None) -> str:
    python_path = (env or os.environ).get("PYTHONPATH", "")
    facts = {
        "python": sys.version,
        "command": [_relative(part, cwd) for part in command],
        "files": {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in reads},
        "packages": _packages(python_path),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:32]


def _relative(part: str, cwd: Path) -> str:
    """``part`` without what changes from checkout to checkout: the case's folder, the
    checkout's own path (CI clones it anew each time), its interpreter's path."""
    for place, name in ((str(cwd), "<case>"), (sys.executable, "<python>"), (str(REPO), "<repo>")):
        part = part.replace(place, name)
    return part


def _packages(python_path: str) -> list[str]:
    """The distributions the reference process sees: the interpreter's and those on its
    PYTHONPATH (the model zoo), with their versions (not the test process's ``sys.path``,
    which other tests extend with packages of their own)."""
    installed = sysconfig.get_paths()
    paths = [p for p in python_path.split(os.pathsep) if p] + [installed["purelib"],
                                                             installed["platlib"]]
    found = {f"{dist.metadata['Name']}=={dist.version}"
             for dist in metadata.distributions(path=paths) if dist.metadata["Name"]}
    return sorted(found)
