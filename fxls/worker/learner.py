"""The third-party libraries the worker's zygotes keep imported, learned from the jobs.

A job tells the worker which modules it imported; the ones of installed libraries
(``libraries.locate``) are *offered*. Offered libraries are imported in a trial process
first (``trial``), in the background; those whose import succeeded and started nothing that
a fork would break are *learned*: the pool starts a zygote that imports them, which
replaces the current one once ready (``JobProcesses.set_libraries``). A save never waits for
any of this. A library that failed its trial is left out for the worker's life, with one
log line saying why.

Before each job a few stats per learned library tell whether it changed on disk (a ``pip
install``, a replaced package: ``libraries.quick_fingerprint``); between jobs, the stats of
every file its import loaded. A changed library is dropped at once (its processes and its
zygote end) and learned again when a job imports it. A job whose own code is a learned
library or sits where its own package would be shadowed by one runs without it
(``libraries.conflicts``).
"""

from __future__ import annotations

import os
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from fxls.worker import trial as trials
from fxls.worker.libraries import (
    LIBRARIES_LIMIT,
    NAMES_LIMIT,
    Library,
    conflicts,
    full_fingerprint,
    library_files,
    locate,
    quick_fingerprint,
    with_modules,
)
from fxls.worker.pool import JobProcesses, kill_child, reap

#: trials in the worker's life (each learned set, each relearning after a change)
TRIALS_LIMIT = 24
#: a trial starts once no job has run nor anything been offered for this long: what one
#: job and the next offer is tried together, and a save's job never competes with it
QUIET_S = 0.5


@dataclass
class Learned:
    library: Library
    quick: tuple[Any, ...]
    files: list[str]
    full: tuple[Any, ...]


class LibraryLearner:
    """What the worker's zygotes import of the libraries jobs import."""

    def __init__(self, pool: JobProcesses, selector: selectors.BaseSelector,
                 log: Callable[[str], None]) -> None:
        self.pool = pool
        self.selector = selector
        self.log = log
        #: off where job processes do not come from a zygote (nowhere to import them)
        self.enabled = False
        self.learned: dict[str, Learned] = {}
        #: libraries to try (new ones, or learned ones with more submodules)
        self.offered: dict[str, Library] = {}
        #: library -> why it is left out
        self.rejected: dict[str, str] = {}
        self.trial: trials.Trial | None = None
        #: the libraries the running trial imports
        self.trying: dict[str, Library] = {}
        self.trials = 0
        self.quiet_since = time.monotonic()

    # ------------------------------------------------------------ offers
    def offer(self, modules: Any) -> None:
        """Consider the modules a job imported (or that the client expects jobs to import).
        Untrusted: each name is checked here."""
        if not self.enabled or not isinstance(modules, list):
            return
        self.quiet_since = time.monotonic()
        by_top: dict[str, list[str]] = {}
        for name in modules[:NAMES_LIMIT]:
            if isinstance(name, str) and len(name) < 1000:
                by_top.setdefault(name.partition(".")[0], []).append(name)
        for top, names in list(by_top.items())[:LIBRARIES_LIMIT]:
            if top in self.rejected:
                continue
            known = self.offered.get(top) or self.trying.get(top) or (
                self.learned[top].library if top in self.learned else None)
            library = known or locate(top)
            if library is None:
                continue
            extended = with_modules(library, names)
            room = known is not None or len(self.learned) + len(self.offered) < LIBRARIES_LIMIT
            if room and (known is None or extended.modules != known.modules):
                self.offered[top] = extended

    # ------------------------------------------------------------ jobs
    def refuse_for(self, sources: Any) -> frozenset[str]:
        """The learned libraries a job with ``sources`` (its document, project root) must
        run without; first, libraries changed on disk are dropped."""
        if not self.learned:
            return frozenset()
        changed = [name for name, item in self.learned.items()
                   if quick_fingerprint(item.library) != item.quick]
        self._drop(changed)
        if not isinstance(sources, list):
            return frozenset()
        return frozenset(conflicts((item.library for item in self.learned.values()), sources))

    def after_job(self) -> None:
        """Between jobs: the thorough check, every file each learned library loaded."""
        self.quiet_since = time.monotonic()
        self._drop([name for name, item in self.learned.items()
                    if full_fingerprint(item.files) != item.full])

    def _drop(self, names: list[str]) -> None:
        if not names:
            return
        for name in names:
            del self.learned[name]
            self.log(f"{name} changed on disk: job processes import it afresh until it is "
                     f"learned again")
        self.pool.set_libraries(self.preload())

    def preload(self) -> tuple[str, ...]:
        return tuple(name for top in sorted(self.learned)
                     for name in self.learned[top].library.names())

    # ------------------------------------------------------------ trials
    def tick(self, jobs_running: bool) -> None:
        """In the worker's loop: start a trial of what was offered once quiet; end one that
        overran."""
        now = time.monotonic()
        if self.trial is not None and now >= self.trial.deadline:
            kill_child(self.trial.pid)
            self._trial_ended(f"its import took over {trials.TIMEOUT_S:g} s")
        if (self.trial is None and self.offered and self.trials < TRIALS_LIMIT
                and not jobs_running and now - self.quiet_since >= QUIET_S):
            self._start_trial()

    def _start_trial(self) -> None:
        tops = {**{n: item.library for n, item in self.learned.items()}, **self.offered}
        self.offered.clear()
        trial = trials.start([tops[name].names() for name in sorted(tops)])
        if trial is None:
            return
        self.trials += 1
        self.trial = trial
        self.pool.helpers.add(trial.pid)
        self.trying = tops
        self.selector.register(trial.fileno(), selectors.EVENT_READ, ("trial", trial))

    def read_trial(self, trial: trials.Trial) -> None:
        """The trial's report pipe is readable: take it; at its end, decide."""
        try:
            data = os.read(trial.fileno(), 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            trial.take(data)
        else:
            self._trial_ended("the trial process ended while importing it")

    def _trial_ended(self, unfinished: str) -> None:
        trial, self.trial = self.trial, None
        if trial is None:
            return
        trying, self.trying = self.trying, {}
        try:
            self.selector.unregister(trial.fileno())
        except (KeyError, ValueError):
            pass
        os.close(trial.fileno())
        kill_child(trial.pid)
        reap(trial.pid)
        self.pool.helpers.discard(trial.pid)
        report = trials.result(trial)
        passed: dict[str, Learned] = {}
        for name, library in trying.items():
            outcome = report.get(name)
            if not isinstance(outcome, dict):
                self._reject(name, unfinished)
            elif outcome.get("ok") is not True:
                self._reject(name, str(outcome.get("why")))
            else:
                failed = outcome.get("failed")
                if isinstance(failed, list) and failed:
                    library = replace(library, modules=tuple(
                        m for m in library.modules if m not in failed))
                loaded = outcome.get("files")
                files = library_files(library, loaded if isinstance(loaded, dict) else {})
                passed[name] = Learned(library, quick_fingerprint(library), files,
                                       full_fingerprint(files))
        if len(passed) < len(trying):
            # what a failed library imported was blamed on it: try the others again alone
            self.offered.update({name: item.library for name, item in passed.items()})
            self.pool.set_libraries(self.preload())  # a learned one may have failed now
            return
        self.learned = passed
        self.log(f"job processes now start with {', '.join(sorted(passed))} imported")
        self.pool.set_libraries(self.preload())

    def _reject(self, name: str, why: str) -> None:
        self.learned.pop(name, None)
        self.offered.pop(name, None)
        self.rejected[name] = why
        self.log(f"{name} is left out of the job processes' imports: {why}")

    def zygote_failed(self, libraries: frozenset[str]) -> None:
        """A zygote importing ``libraries`` ended before it was ready: those it was the
        first to import are left out."""
        current = set().union(*(z.preloaded for z in self.pool.zygotes.values()))
        for name in sorted(libraries - current) or sorted(libraries):
            self._reject(name, "a zygote importing it ended")
        self.pool.set_libraries(self.preload())

    def close(self) -> None:
        trial, self.trial = self.trial, None
        if trial is not None:
            kill_child(trial.pid)
            reap(trial.pid)
            os.close(trial.fileno())
