"""Process facts from /proc (Linux): a process's children and its memory."""

from __future__ import annotations

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
