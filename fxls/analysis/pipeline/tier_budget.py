"""How much of the job's time the export and compile tiers may take.

The worker ends a job at its ``timeout`` (FX102), and an ended job sends no report at all:
every status and failure the tiers found would be lost with the class that ran over. So
the tiers start another class only while what is left of the timeout holds the longest
class so far and a margin for the report; the classes left are "not run" with the reason.
A library file in place has dozens of classes to export and compile (BERT's 22 took about a
minute on a busy machine, past the default 30 s).
"""

from __future__ import annotations

from time import perf_counter

#: the part of the timeout kept for what follows the tiers (the report, its checks, sending)
_MARGIN = 0.1


def out_of_time(timeout: float) -> str:
    return (f"not run: out of time (the job's timeout is {timeout:g} s; raise it with "
            "`timeout` in [tool.fxls] or `--timeout`)")


class TierBudget:
    """The time left for the tiers, measured from when they start."""

    def __init__(self, timeout: float, elapsed: float) -> None:
        self._timeout = timeout
        self._end = perf_counter() + timeout * (1 - _MARGIN) - elapsed
        self._longest = 0.0
        self._started: float | None = None

    @classmethod
    def of(cls, timeout: float, timings_ms: dict[str, float]) -> TierBudget:
        """The budget of a job whose stages so far took ``timings_ms`` (the analysis'
        ``Stopwatch``: ``models`` is a lap from its start, the others stages' own times)."""
        stages = sum(timings_ms.get(name, 0.0) for name in ("import", "trace", "observe"))
        return cls(timeout, max(timings_ms.get("models", 0.0), stages) / 1000)

    def allows_another(self) -> bool:
        """Whether a class as long as the longest so far still ends in time (no timeout:
        always)."""
        return self._timeout <= 0 or perf_counter() + self._longest < self._end

    def start(self) -> None:
        self._started = perf_counter()

    def stop(self) -> None:
        if self._started is not None:
            self._longest = max(self._longest, perf_counter() - self._started)
            self._started = None

    @property
    def reason(self) -> str:
        return out_of_time(self._timeout)
