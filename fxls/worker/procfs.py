"""Process facts from /proc (Linux): a process's children, its process tree, its memory;
the space a folder takes."""

from __future__ import annotations

import os
from pathlib import Path


def child_pids(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: fields follow the last ")"
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB (0 when it is gone)."""
    return _kb(f"/proc/{pid}/status", "VmRSS:") / 1024


def pss_mb(pid: int) -> float:
    """Proportional memory of ``pid`` in MB: pages shared with other processes (its forks)
    divided among them, so that a sum over processes counts each page once."""
    return _kb(f"/proc/{pid}/smaps_rollup", "Pss:") / 1024


def _kb(path: str, key: str) -> int:
    """The kB figure of the line starting with ``key`` (0 when it or the process is gone)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_tree(pid: int, limit: int = 100_000) -> list[int]:
    """``pid`` and its descendants (children of every thread, from ``task/*/children``),
    at most ``limit`` of them: a fork bomb is over any limit long before it is listed."""
    found, queue = [pid], [pid]
    while queue and len(found) <= limit:
        parent = queue.pop()
        for child in thread_children(parent):
            found.append(child)
            queue.append(child)
    return found


def thread_children(pid: int) -> list[int]:
    """Children of ``pid``, forked by any of its threads (empty when it is gone)."""
    pids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                pids += [int(p) for p in handle.read().split()]
        except (OSError, ValueError):
            continue
    return pids


def resident_kb(pid: int) -> int:
    """Resident memory of ``pid`` in kB from ``statm`` (cheap: no page walk; 0 when gone).
    Pages it shares with other processes count in full: an upper bound of its ``pss``."""
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE_KB
    except (OSError, ValueError, IndexError):
        return 0


def pss_kb(pid: int) -> int:
    """Proportional memory of ``pid`` in kB (``pss_mb``)."""
    return _kb(f"/proc/{pid}/smaps_rollup", "Pss:")


def pid_namespace(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def folder_kb(path: str, limit_kb: int | None = None) -> int:
    """Disk space the files under ``path`` take, in kB (stops counting past ``limit_kb``)."""
    total = 0
    stack = [path]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks // 2
            except OSError:
                continue
        if limit_kb is not None and total > limit_kb:
            break
    return total


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
