"""Back the warm worker's anonymous memory with transparent huge pages (Linux).

A fork copies the parent's page tables: one entry per 4 KB page. For a warm worker's heap
(~140 MB of anonymous memory after the imports) that took 8-14 ms per fork; with that memory
in 2 MB pages it takes ~2 ms (docs/performance.md). Children still copy only the 4 KB pages
they write.
"""

from __future__ import annotations

import ctypes
import sys

_MADV_COLLAPSE = 25  # Linux 6.1+: make huge pages of what a range holds, now
_HUGE = 2 << 20


def collapse_anonymous_memory() -> int:
    """Collapse this process's private anonymous memory (the heap and large allocations)
    into huge pages. Only what is there now: the regions are not marked for huge pages
    (``MADV_HUGEPAGE``), so later allocations, e.g. a job's, keep ordinary pages and never
    wait for the kernel to compact memory. Returns the bytes collapsed (0 where the system
    does not support it: nothing changes then)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as f:
            regions = [_aligned(line) for line in f]
    except (OSError, AttributeError):
        return 0
    done = 0
    for start, end in (r for r in regions if r is not None):
        if madvise(start, end - start, _MADV_COLLAPSE) == 0:
            done += end - start
    return done


def _aligned(maps_line: str) -> tuple[int, int] | None:
    """The 2 MB-aligned part of a writable private anonymous mapping (or the heap)."""
    fields = maps_line.split()
    if len(fields) < 5 or not fields[1].startswith("rw") or fields[1][3] != "p":
        return None
    if len(fields) > 5 and fields[5] != "[heap]":
        return None  # a file, the stack, vdso...
    low, high = (int(x, 16) for x in fields[0].split("-"))
    start, end = (low + _HUGE - 1) & ~(_HUGE - 1), high & ~(_HUGE - 1)
    return (start, end) if end - start >= _HUGE else None
