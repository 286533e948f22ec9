"""``python -m fxls.worker '<json config>'``: the warm worker process.

The client talks to it over the worker's original stdin/stdout, which are moved to private
fds first thing; afterwards fd 1 is a copy of stderr, so stray prints cannot corrupt the
protocol (nor the caller's stdout if that was inherited).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
from typing import Any


def own_variables_only() -> None:
    """Start over without the caller's own environment variables (tokens...): the worker
    keeps an allow-list (``jobenv``), and its job processes, forked from it, carry its memory.
    The interpreter is started again (``exec``, same pid and standard streams) before
    anything else is imported."""
    from fxls.worker.jobenv import worker_environment

    env = worker_environment()
    if env != dict(os.environ):
        os.execve(sys.executable, sys.orig_argv, env)


def _take_channel() -> tuple[int, int]:
    channel_in, channel_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return channel_in, channel_out


def single_threaded_libraries() -> None:
    """BLAS thread pools stay off unless the user asked for them (numpy's OpenBLAS starts one
    when torch imports numpy): a single-threaded worker clones its job processes straight
    into their namespaces (``sandbox.fork_job_process``); the jobs inherit the setting."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def own_environment_only() -> None:
    """Imports come from the interpreter's own environment and PYTHONPATH only, never from
    the working directory (a workspace's ``numpy.py`` must not run here): the client starts
    the worker with ``-P``; this also drops the empty and relative entries PYTHONPATH may
    hold. User folders go on ``sys.path`` inside a job only."""
    sys.path[:] = [p for p in sys.path if p and os.path.isabs(p)]


def outside_the_workspace(config: dict[str, Any]) -> None:
    """The worker imports nothing from inside a workspace or project root (``roots``, more
    come with ``warm``) but fxls itself and the interpreter's installation: a workspace
    folder on PYTHONPATH is not even on ``sys.path`` while the interpreter starts (the
    client passes the user's entries in ``python_path``), and once they are put back, for
    the jobs, ``import_origin.outside_roots`` keeps the worker's own imports (torch and its
    dependencies, the warm and learned modules) from finding anything in them."""
    from fxls.worker.import_origin import interpreter_folders, outside_roots

    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    outside_roots([*interpreter_folders(), home], config.get("roots") or ())
    ours = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries = [p for p in config.get("python_path") or () if isinstance(p, str)
               and os.path.isabs(p) and p not in sys.path]
    at = len([p for p in sys.path[:len(ours)] if p in ours])
    sys.path[at:at] = entries
    # what the jobs' environment says (``jobenv``): the PYTHONPATH sys.path now reflects
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*ours, *entries]))


def _start_sandbox(config: dict[str, Any]) -> dict[str, Any] | None:
    """Probe the kernel and turn the job sandbox on (before torch: the probe forks)."""
    if not config.get("sandbox"):
        return None
    from fxls.worker import sandbox

    facts = sandbox.configure(config.get("jobs_dir"))
    return {**facts.to_dict(), "summary": facts.describe()}


def _check_protocol(config: dict[str, Any], channel_out: int) -> None:
    """The handshake's first half: a client speaking another protocol version is told so at
    once (an ``error`` in place of ``ready``), and the worker exits."""
    from fxls.worker.protocol import Op, ProtocolError, check_version, encode, write_all

    try:
        check_version(config.get("protocol"), "the client")
    except ProtocolError as error:
        write_all(channel_out, encode({"op": Op.ERROR, "id": None, "error": str(error)}))
        sys.exit(2)


def main() -> None:
    own_variables_only()
    channel_in, channel_out = _take_channel()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when the worker ends
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    config: dict[str, Any] = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    _check_protocol(config, channel_out)
    own_environment_only()
    outside_the_workspace(config)
    single_threaded_libraries()
    facts = _start_sandbox(config)

    from fxls.worker.child import Limits
    from fxls.worker.worker_imports import warm_imports
    from fxls.worker.worker_loop import Worker

    errors = warm_imports(tuple(config.get("warm_imports", ())))
    gc.collect()
    gc.freeze()  # keep the warm heap shared with the children (no copy-on-write by the GC)
    limits = Limits(config.get("memory_limit_mb"), config.get("cpu_limit_s"))
    worker = Worker(channel_in, channel_out, limits, config.get("warm_up"),
                    tuple(config.get("learn_imports", ())),
                    learn_libraries=config.get("learn_libraries") is True)
    from fxls.worker.protocol import PROTOCOL_VERSION, Op

    ready = {"op": Op.READY, "pid": os.getpid(), "protocol": PROTOCOL_VERSION,
             "python": sys.version, "import_errors": errors, "sandbox": facts}
    worker.serve(ready, config.get("prime"))


if __name__ == "__main__":
    main()
