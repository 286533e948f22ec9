"""The environment a job sees: an allow-list, never the caller's own variables (an editor's
or a CI runner's tokens, the server's settings).

Two steps, because a forked job process carries its parent's memory: the worker starts over
(``exec``) with ``worker_environment()`` before it imports anything, so not even its memory
holds what it was not meant to keep, and each job then gets ``job_environment()`` (``PATH``,
the locale, ``PYTHONPATH`` as the client computed it, thread counts, ``HOME`` and ``TMPDIR``
its private folder, and the project's ``[tool.fxls] env`` additions).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

#: what a job gets from the worker's environment (names, and prefixes ending in ``_``)
JOB_NAMES = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "LD_LIBRARY_PATH",
                       "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
JOB_PREFIXES = ("LC_",)
#: what the worker keeps of its caller's environment: what a job gets, and what configures
#: the worker, Python and the libraries it loads (no tokens: none of these names hold one)
WORKER_NAMES = JOB_NAMES | {"HOME", "TMPDIR", "USER", "LOGNAME", "XDG_RUNTIME_DIR",
                            "VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD", "PYTHONHOME",
                            "PYTHONWARNINGS", "PYTHONHASHSEED", "PYTHONUNBUFFERED",
                            "PYTHONFAULTHANDLER", "PYTHONMALLOC", "PYTHONDEVMODE",
                            "COVERAGE_PROCESS_START", "COVERAGE_FILE"}
WORKER_PREFIXES = ("LC_", "FXLS_", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_")
#: torch's cache folders (each name's folder inside the worker's): importing
#: ``torch._dynamo`` makes inductor's at once (``torch/_dynamo/package.py``), by default in
#: the machine's temporary folder (``/tmp/torchinductor_<user>``)
TORCH_CACHES = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}


def _kept(environ: Mapping[str, str], names: frozenset[str] | set[str],
          prefixes: tuple[str, ...]) -> dict[str, str]:
    return {name: value for name, value in environ.items()
            if name in names or name.startswith(prefixes)}


def worker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    return _kept(os.environ if environ is None else environ, WORKER_NAMES, WORKER_PREFIXES)


def keep_torch_caches_in(folder: str) -> None:
    """The worker's torch caches inside ``folder`` (in its jobs' folder, removed with it):
    the worker imports ``torch._dynamo`` itself once a job has used it. Jobs never get these
    names: theirs are in their own folder, through ``TMPDIR``."""
    for name, leaf in TORCH_CACHES.items():
        os.environ[name] = os.path.join(folder, leaf)


def job_environment(job_dir: str, extra: Iterable[tuple[str, str]] = (),
                    environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = _kept(os.environ if environ is None else environ, JOB_NAMES, JOB_PREFIXES)
    env.update(extra)
    env.update(HOME=job_dir, TMPDIR=job_dir)
    return env


def replace_environment(job_dir: str, extra: Iterable[tuple[str, str]] = ()) -> None:
    """In the job process, before user code: ``os.environ`` (and the C library's
    environment, which subprocesses inherit) becomes ``job_environment``."""
    env = job_environment(job_dir, extra)
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    os.environ.update(env)
