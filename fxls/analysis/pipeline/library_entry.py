"""The user's line that called into a library function, found by running the module.

dynamo compiles a library function's frame on its own once a graph break has split the
frame that called it: a break found there has a stack of library frames only, and the
user's line that reached it is not in it. An eager run of the module with a profile hook
sees each such function entered, and the user's frames alive at that moment.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from fxcore.source import SourceSpan, span_of_frame

#: a function as a stack names it: its file, and a line inside it
Entry = tuple[str, int]


def user_callers(run_eagerly: Callable[[], Any], entries: Iterable[Entry],
                 is_reportable: Callable[[str], bool]) -> dict[Entry, tuple[SourceSpan, ...]]:
    """For each entry, the user's frames (outermost first) when its function was first
    entered in an eager run of the module (``run_eagerly``); entries never entered are
    absent."""
    wanted = {entry: None for entry in entries}
    by_file: dict[str, list[int]] = {}
    for filename, line in wanted:
        by_file.setdefault(filename, []).append(line)
    found: dict[Entry, tuple[SourceSpan, ...]] = {}

    def profile(frame: types.FrameType, event: str, _arg: Any) -> None:
        if event != "call" or frame.f_code.co_filename not in by_file:
            return
        code = frame.f_code
        for line in by_file[code.co_filename]:
            entry = (code.co_filename, line)
            if entry not in found and _contains(code, line):
                found[entry] = _user_frames(frame.f_back, is_reportable)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run_eagerly()
    except Exception:  # the frames seen before it raised still count
        pass
    finally:
        sys.setprofile(previous)
    return {entry: frames for entry, frames in found.items() if frames}


def _contains(code: types.CodeType, line: int) -> bool:
    lines = [number for _, _, number in code.co_lines() if number is not None]
    return bool(lines) and code.co_firstlineno <= line <= max(lines)


def _user_frames(frame: types.FrameType | None,
                 is_reportable: Callable[[str], bool]) -> tuple[SourceSpan, ...]:
    spans = []
    while frame is not None:
        if is_reportable(frame.f_code.co_filename):
            span = span_of_frame(frame)
            if span is not None:
                spans.append(span)
        frame = frame.f_back
    return tuple(reversed(spans))
