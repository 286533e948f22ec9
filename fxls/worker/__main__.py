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

from fxls.worker.messages import Ready, Refused, WorkerConfig, message_of
from fxls.worker.protocol import (
    PROTOCOL_VERSION,
    ProtocolError,
    check_version,
    encode,
    write_all,
)


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


def outside_the_workspace(config: WorkerConfig) -> None:
    """The worker imports nothing from inside a workspace or project root (``roots``, more
    come with ``warm``) but fxls itself and the interpreter's installation: a workspace
    folder on PYTHONPATH is not even on ``sys.path`` while the interpreter starts (the
    client passes the user's entries in ``python_path``), and once they are put back, for
    the jobs, ``import_origin.outside_roots`` keeps the worker's own imports (torch and its
    dependencies, the warm and learned modules) from finding anything in them."""
    from fxls.worker.import_origin import interpreter_folders, outside_roots

    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    outside_roots([*interpreter_folders(), home], config.roots)
    ours = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    entries = [p for p in config.python_path if os.path.isabs(p) and p not in sys.path]
    at = len([p for p in sys.path[:len(ours)] if p in ours])
    sys.path[at:at] = entries
    # what the jobs' environment says (``jobenv``): the PYTHONPATH sys.path now reflects
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*ours, *entries]))


def _start_sandbox(config: WorkerConfig) -> dict[str, str | bool | int] | None:
    """Probe the kernel and turn the job sandbox on (before torch: the probe forks)."""
    if not config.sandbox:
        return None
    from fxls.worker import sandbox
    from fxls.worker.jobenv import keep_torch_caches_in

    facts = sandbox.configure(config.jobs_dir)
    caches = sandbox.job_folder("torch-caches")
    if caches is not None:
        keep_torch_caches_in(caches)
    return {**facts.to_dict(), "summary": facts.describe()}


def _check_protocol(theirs: object, channel_out: int) -> None:
    """The handshake's first half: a client speaking another protocol version is told so at
    once (an ``error`` in place of ``ready``), and the worker exits."""
    try:
        check_version(theirs, "the client")
    except ProtocolError as error:
        write_all(channel_out, encode(message_of(Refused(None, str(error)))))
        sys.exit(2)


def main() -> None:
    own_variables_only()
    channel_in, channel_out = _take_channel()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when the worker ends
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sent = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    _check_protocol(sent.get("protocol") if isinstance(sent, dict) else None, channel_out)
    config = WorkerConfig.from_message(sent)
    own_environment_only()
    outside_the_workspace(config)
    single_threaded_libraries()
    facts = _start_sandbox(config)

    from fxls.worker.child import Limits
    from fxls.worker.worker_imports import warm_imports
    from fxls.worker.worker_loop import Worker

    errors = warm_imports(config.warm_imports)
    gc.collect()
    gc.freeze()  # keep the warm heap shared with the children (no copy-on-write by the GC)
    limits = Limits(config.memory_limit_mb, config.cpu_limit_s)
    worker = Worker(channel_in, channel_out, limits, config.warm_up, config.learn_imports,
                    learn_libraries=config.learn_libraries, warm_from=config.warm_from)
    ready = Ready(os.getpid(), PROTOCOL_VERSION, sys.version, errors, facts)
    worker.serve(ready, config.prime)


if __name__ == "__main__":
    main()
