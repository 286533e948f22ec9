"""Job targets for the worker tests (imported inside the worker's job processes)."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path
from typing import Any

STATE: dict[str, Any] = {}


def echo(params: dict[str, Any]) -> dict[str, Any]:
    return {"params": params, "pid": os.getpid()}


def big(params: dict[str, Any]) -> str:
    return "x" * int(params["size"])


def fail(params: dict[str, Any]) -> None:
    raise ValueError(f"bad input {params.get('value')!r}")


def nap(params: dict[str, Any]) -> int:
    time.sleep(float(params["seconds"]))
    return os.getpid()


def nap_stamped(params: dict[str, Any]) -> dict[str, Any]:
    """Sleep; when the job ran, on the machine's monotonic clock (one for all processes)."""
    start = time.monotonic()
    time.sleep(float(params["seconds"]))
    return {"pid": os.getpid(), "start": start, "end": time.monotonic()}


def sleep_forever(params: dict[str, Any]) -> None:
    if "pidfile" in params:
        with open(params["pidfile"], "w") as f:
            f.write(str(os.getpid()))
    print("going to sleep", flush=True)
    while True:
        time.sleep(1)


def busy_loop(params: dict[str, Any]) -> None:
    while True:
        pass


def segfault(params: dict[str, Any]) -> None:
    ctypes.string_at(0)


def os_exit(params: dict[str, Any]) -> None:
    os._exit(int(params.get("code", 3)))


def allocate(params: dict[str, Any]) -> int:
    data = bytearray(int(params.get("gb", 2)) * 1024**3)
    return len(data)


def flood(params: dict[str, Any]) -> str:
    line = "y" * 99
    for _ in range(int(params.get("mb", 50)) * 1024 * 1024 // 100):
        print(line)
    print("the end")
    return "done"


def recurse(params: dict[str, Any]) -> int:
    return recurse(params) + 1


def talk(params: dict[str, Any]) -> str:
    print("MARKER-print")
    sys.stderr.write("MARKER-stderr\n")
    sys.stdout.flush()
    os.write(1, b"MARKER-fd1\n")
    return "talked"


def set_global(params: dict[str, Any]) -> str:
    STATE["value"] = params["value"]
    sys.modules["fxls_test_injected"] = sys.modules[__name__]
    return "set"


def read_global(params: dict[str, Any]) -> dict[str, Any]:
    return {"state": dict(STATE), "injected": "fxls_test_injected" in sys.modules}


def not_json(params: dict[str, Any]) -> object:
    return object()


def matmul(params: dict[str, Any]) -> float:
    import torch

    torch.set_num_threads(2)
    a = torch.randn(256, 256)
    return float((a @ a).sum().item() * 0 + torch.get_num_threads())


def torch_loaded(params: dict[str, Any]) -> bool:
    return "torch" in sys.modules


def partials(params: dict[str, Any]) -> str:
    from fxls.worker.api import send_partial

    for index in range(int(params.get("count", 3))):
        assert send_partial({"index": index})
    if params.get("then_exit"):
        os._exit(5)
    assert not send_partial(object())  # not JSON data: refused, nothing sent
    return "final"


def partial_after_a_nap(params: dict[str, Any]) -> float:
    """Sleep, send a partial result, sleep again; returns when the partial went out (on the
    machine's monotonic clock)."""
    from fxls.worker.api import send_partial

    time.sleep(float(params["seconds"]))
    sent = time.monotonic()
    assert send_partial({"sent": sent})
    time.sleep(float(params["seconds"]))
    return sent


def partial_then_a_nap(params: dict[str, Any]) -> float:
    """Send a partial result, sleep; returns when it is about to end (monotonic clock)."""
    from fxls.worker.api import send_partial

    assert send_partial({"sent": time.monotonic()})
    time.sleep(float(params["seconds"]))
    return time.monotonic()


def warm_up() -> None:
    """A warm-up that leaves traces a job must (STATE) or must not (the rest) see; it puts
    torch's random generator back itself, as the job API asks."""
    import torch

    STATE["warmed"] = os.getpid()
    print("WARM-UP OUTPUT")
    sys.path.insert(0, "/nonexistent/warm-up")
    rng = torch.random.get_rng_state()
    torch.rand(3)
    torch.random.set_rng_state(rng)


def endless_warm_up() -> None:
    """Warms up until the job arrives (as fxls's warm-up stops at its safe point)."""
    from fxls.worker.api import job_waiting

    deadline = time.monotonic() + 30
    while not job_waiting() and time.monotonic() < deadline:
        time.sleep(0.01)
    STATE["warm_up_stopped_early"] = time.monotonic() < deadline


def failing_warm_up() -> None:
    raise RuntimeError("warm-up failed")


def warm_up_stopped(params: dict[str, Any]) -> Any:
    return STATE.get("warm_up_stopped_early")


def warm_state(params: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {
        "warmed": STATE.get("warmed") == os.getpid(),
        "path": "/nonexistent/warm-up" in sys.path,
        "torch": torch.rand(2).tolist(),
    }


def import_and_report(params: dict[str, Any]) -> dict[str, Any]:
    """Which of ``params["modules"]`` were loaded when the job started; then import them."""
    import importlib

    before = {name: name in sys.modules for name in params["modules"]}
    for name in params["modules"]:
        importlib.import_module(name)
    import torch

    product = torch.randn(300, 300) @ torch.randn(300, 300)  # threads still work after
    return {"loaded_at_start": before, "threads": torch.get_num_threads(),
            "finite": bool(product.isfinite().all())}


def primed_by(params: dict[str, Any]) -> Any:
    """The pid of the process the warm-up ran in (the worker, for ``prime``)."""
    return STATE.get("warmed")


def stop_worker(params: dict[str, Any]) -> str:
    """Stop the worker (this job process's parent), as hostile or careless code may."""
    import signal

    os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(float(params.get("then_sleep", 60)))
    return "the worker was stopped"


def network_namespace(params: dict[str, Any]) -> str:
    return os.readlink("/proc/self/ns/net")


def library_report(params: dict[str, Any]) -> dict[str, Any]:
    """Whether library ``params["name"]`` was loaded when the job started; then import it
    (and ``params["also"]``) and report its ``VERSION`` and file."""
    import importlib

    name = params["name"]
    loaded = {n: n in sys.modules for n in [name, *params.get("also", [])]}
    module = importlib.import_module(name)
    for other in params.get("also", []):
        importlib.import_module(other)
    return {"loaded": loaded[name], "also_loaded": loaded, "version": getattr(
        module, "VERSION", None), "file": getattr(module, "__file__", None),
        "pid": os.getpid()}


def send_warmth(params: dict[str, Any]) -> bool:
    """Offer the next job processes ``params["value"]`` (``api.send_warmth``)."""
    from fxls.worker.api import send_warmth as send

    return send(params["value"])


def warm_from_value(value: Any) -> None:
    """A ``warm_from``: note each warmth value this process was given (and, where the value
    names a ``mark`` file, create it: the test's signal, before this process is confined)."""
    STATE.setdefault("warmth", []).append(value)
    if isinstance(value, dict) and "mark" in value:
        Path(value["mark"]).touch()


def warmth_given(params: dict[str, Any]) -> Any:
    return STATE.get("warmth", [])
