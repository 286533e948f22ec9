"""Job targets that go over a job's limits, all processes together (imported in the job)."""

from __future__ import annotations

import errno
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def usage(params: dict[str, Any]) -> dict[str, Any]:
    """This job process's address space, resident and proportional memory (kB)."""
    def field(path: str, key: str) -> int:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
        return 0

    return {"vm_kb": field("/proc/self/status", "VmSize:"),
            "rss_kb": field("/proc/self/status", "VmRSS:"),
            "pss_kb": field("/proc/self/smaps_rollup", "Pss:")}


_kept: list[bytes] = []


def _hold(mb: int) -> None:
    """Take ``mb`` MB of memory, every page written (resident), 50 MB at a time."""
    for _ in range(mb // 50):
        _kept.append(b"\x01" * (50 * 1024 * 1024))


def forks_that_hold_memory(params: dict[str, Any]) -> str:
    """Fork ``forks`` processes that each take ``mb`` MB and wait (each one under the
    per-process address-space limit; together over the job's memory limit)."""
    children = []
    for _ in range(int(params["forks"])):
        pid = os.fork()
        if pid == 0:
            _hold(int(params["mb"]))
            time.sleep(60)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return "all forks ended"


def start_processes(params: dict[str, Any]) -> str:
    """Start ``count`` processes that sleep, then wait for them."""
    children = []
    for _ in range(int(params["count"])):
        pid = os.fork()
        if pid == 0:
            time.sleep(float(params.get("sleep", 60)))
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return "all processes ended"


def fill_temp_folder(params: dict[str, Any]) -> dict[str, Any]:
    """Write ``mb`` MB into the job's temporary folder, 1 MB at a time."""
    written = 0
    block = b"\x02" * (1024 * 1024)
    path = os.path.join(tempfile.gettempdir(), "fill")
    try:
        with open(path, "wb") as handle:
            for _ in range(int(params["mb"])):
                handle.write(block)
                handle.flush()
                written += 1
    except OSError as error:
        return {"written_mb": written, "error": errno.errorcode.get(error.errno or 0)}
    if params.get("then_sleep"):
        time.sleep(float(params["then_sleep"]))
    return {"written_mb": written, "error": None}
