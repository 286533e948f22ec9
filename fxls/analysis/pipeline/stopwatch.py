"""How long the stages of one analysis took: ``FileReport.timings_ms``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter


class Stopwatch:
    """Writes milliseconds into ``timings``: a stage's own time (``timed``, which nests), or
    the time since the analysis began (``lap``: what an editor waited for that result)."""

    def __init__(self, timings: dict[str, float]) -> None:
        self._timings = timings
        self._started = perf_counter()

    def lap(self, name: str) -> None:
        self._timings[name] = (perf_counter() - self._started) * 1000

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        started = perf_counter()
        yield
        self._timings[name] = (perf_counter() - started) * 1000
