"""Where a job is running, known without its cooperation.

A job that times out (or goes over a limit) is asked for its stack with a signal
(``child.DUMP_SIGNAL``) just before it is killed; code that ignores or blocks that signal
(``signal.signal(SIGUSR1, SIG_IGN)``) would leave its FX102 at line 1. So each job also runs
a *watchdog* thread that samples the main thread's stack (``sys._current_frames``, no
signal involved) every ``INTERVAL_S`` and, when it changed, sends it to the worker as a
small frame on the result pipe (``WHERE``): the innermost line of each file on the stack.
The frames are in the worker before any kill, so a SIGKILL loses nothing but the last
interval.

The frames come from the job's process, which runs hostile code: the worker keeps the last
one undecoded (at most ``BODY_LIMIT`` bytes), and, if the job is ended, reads from it only
a bounded list of (file, line) pairs (``read_where``); the caller uses them only to choose a
line of the job's own document.
"""

from __future__ import annotations

import json
import sys
import time
from types import FrameType

from fxls.worker import api

#: the status of a frame saying where the job's main thread is
WHERE = "where"
INTERVAL_S = 0.1
#: frames walked from the innermost (deep recursion costs no more than this)
FRAMES_LIMIT = 10_000
#: distinct files kept, innermost first, and the longest file name kept
FILES_LIMIT = 64
NAME_LIMIT = 4096
#: a larger frame is not decoded by the worker
BODY_LIMIT = 64 * 1024
LINE_LIMIT = 10_000_000

#: taken when the worker imports this module, before any user code can rebind them (a model
#: that replaces ``time.sleep`` must not make the watchdog spin)
_sleep = time.sleep
_current_frames = sys._current_frames


def innermost_lines(frame: FrameType | None) -> list[list[str | int]]:
    """[file, line] of the innermost frame of each file on the stack, innermost first."""
    seen: dict[str, int] = {}
    depth = 0
    while frame is not None and depth < FRAMES_LIMIT and len(seen) < FILES_LIMIT:
        name = frame.f_code.co_filename
        line = frame.f_lineno
        if name not in seen and isinstance(line, int) and len(name) <= NAME_LIMIT:
            seen[name] = line
        frame = frame.f_back
        depth += 1
    return [[name, line] for name, line in seen.items()]


def watch(main_thread: int) -> None:
    """The watchdog's loop (a daemon thread of the job): never raises, ends when the job's
    result pipe is closed to it (``api.end_job``)."""
    last: list[list[str | int]] | None = None
    try:
        while True:
            _sleep(INTERVAL_S)
            frame = _current_frames().get(main_thread)
            if frame is None:
                return
            where = innermost_lines(frame)
            del frame
            if where == last:
                continue
            sent = api.send_aside(WHERE, where)
            if sent is None:
                return
            if sent:
                last = where
    except BaseException:  # a broken interpreter state: the signal's dump may still work
        return


def read_where(body: bytes) -> list[tuple[str, int]] | None:
    """The worker's side: the (file, line) pairs of a ``WHERE`` frame (untrusted), or None
    when it is not one of ours."""
    if len(body) > BODY_LIMIT:
        return None
    try:
        value = json.loads(body).get("value")
    except (ValueError, AttributeError, RecursionError):
        return None
    if not isinstance(value, list) or len(value) > FILES_LIMIT:
        return None
    pairs: list[tuple[str, int]] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2):
            return None
        name, line = item
        if (not isinstance(name, str) or len(name) > NAME_LIMIT or type(line) is not int
                or not 0 < line <= LINE_LIMIT):
            return None
        pairs.append((name, line))
    return pairs


def line_in(where: object, path: str) -> int | None:
    """The line of ``path`` in a result's ``where`` (innermost first), if it is there."""
    if not isinstance(where, list):
        return None
    for item in where:
        if (isinstance(item, (list, tuple)) and len(item) == 2 and item[0] == path
                and type(item[1]) is int and item[1] > 0):
            return item[1]
    return None
