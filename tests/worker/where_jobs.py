"""Jobs for tests/worker/test_where.py: code that ignores the signals a job is asked with."""

from __future__ import annotations

import signal
import time
from typing import Any

from fxls.worker import api
from fxls.worker.where import WHERE

DEAF = (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGALRM)


def deaf_sleep(params: dict[str, Any]) -> None:
    for signum in DEAF:
        signal.signal(signum, signal.SIG_IGN)
    time.sleep(1000)  # the line the job is running


def deaf_sleep_after_forgeries(params: dict[str, Any]) -> None:
    """Frames in the watchdog's name that the worker must not take."""
    for signum in DEAF:
        signal.signal(signum, signal.SIG_IGN)
    for forged in ([["x.py", True]], [["x.py", 0]], [["x.py", -3]], [["x.py", 2.5]],
                   [["x" * 5000, 3]], [[3, 3]], "x.py:3", [["x.py", 3, 4]],
                   [[f"f{n}.py", 1] for n in range(100)], [["x.py", 10**12]]):
        api.send_aside(WHERE, forged)
    api.send_aside(WHERE, [["huge.py", 1]] + [["y" * 4000, 1]] * 20)  # over the body limit
    time.sleep(1000)  # the line the job is running
