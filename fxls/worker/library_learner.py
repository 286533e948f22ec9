"""The third-party libraries the worker's zygotes keep imported, learned from the jobs.

A job tells the worker which modules it imported; the ones of installed libraries
(``installed_libraries.locate``) are *offered*. A moment after the last offer that brought something
new (``QUIET_S``: what a job and the next offer bring is imported together; jobs ending
meanwhile do not delay it), unless jobs take every core, the offered libraries join the
learned ones and the pool starts a zygote that imports them all
(``JobProcesses.set_libraries``; it is paused while jobs take every core, so a save never
competes with it for one); it checks each import
(``zygote``, ``import_check``) and replaces the current zygote once ready, so jobs go on
meanwhile with the processes they have. A library whose import failed, or started a thread,
a process or a socket, is left out for the worker's life, with one log line saying why.

Before each job a few stats per learned library tell whether it changed on disk (a ``pip
install``, a replaced package: ``installed_libraries.quick_fingerprint``); after each job,
the stats of the files of every module it imports. A changed library is dropped at once (its
processes and its zygote end) and learned again when a job imports it. A job whose own code
is a learned library or sits where its own package would be shadowed by one runs without it
(``installed_libraries.conflicts``).

Nothing a repository holds or a job could have written is learned: the learner keeps the
workspace roots the client names (``note_roots``), every job's project root and the folders
jobs were allowed to write to (``refuse_for``); a library found under one (``locate``) is
not learned, and one learned before is dropped. The zygotes it starts import only from the
interpreter's installation and the installed-library folders outside those
(``import_origin.Origins``). A job allowed to write somewhere runs without learned
libraries: a preloading zygote's mounts are read-only where it would write.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from fxls.worker.import_origin import Origins, interpreter_folders, loaded_places
from fxls.worker.installed_libraries import (
    LIBRARIES_LIMIT,
    NAMES_LIMIT,
    TOPS_LIMIT,
    Library,
    Stat,
    conflicts,
    full_fingerprint,
    locate,
    module_files,
    quick_fingerprint,
    target_folders,
    with_modules,
)
from fxls.worker.pool import JobProcesses
from fxls.worker.zygote import News, Preload, set_origins

#: new sets of libraries learned in the worker's life (each one costs a zygote's imports)
ROUNDS_LIMIT = 24
#: the pause after an offer that brought something new before a new set is imported: what
#: one job and the next offer bring is imported together
QUIET_S = 0.3
#: workspace and project roots, and job-writable folders, remembered (beyond: learning stops)
FOLDERS_LIMIT = 256


@dataclass
class Learned:
    library: Library
    quick: tuple[Stat | None, ...]
    files: list[str]
    full: tuple[Stat | None, ...]


def learned(library: Library) -> Learned:
    files = module_files(library)
    return Learned(library, quick_fingerprint(library), files, full_fingerprint(files))


class LibraryLearner:
    """What the worker's zygotes import of the libraries jobs import."""

    def __init__(self, pool: JobProcesses, log: Callable[[str], None]) -> None:
        self.pool = pool
        self.log = log
        #: off where job processes do not come from a zygote (nowhere to import them)
        self.enabled = False
        self.learned: dict[str, Learned] = {}
        #: libraries to learn (new ones, or learned ones with more submodules)
        self.offered: dict[str, Library] = {}
        #: library -> why it is left out
        self.rejected: dict[str, str] = {}
        self.rounds = 0
        self.quiet_since = time.monotonic()
        #: workspace and project roots (absolute, as given), and folders jobs may write to
        self.roots: set[str] = set()
        self.writable: set[str] = set()
        set_origins(self.origins())

    # ------------------------------------------------------------ offers
    def offer(self, modules: object) -> None:
        """Consider the modules a job imported (or that the client expects jobs to import).
        Untrusted: each name is checked here."""
        if not self.enabled or not isinstance(modules, list):
            return
        by_top: dict[str, list[str]] = {}
        for name in modules[:NAMES_LIMIT]:
            if isinstance(name, str) and len(name) < 1000:
                by_top.setdefault(name.partition(".")[0], []).append(name)
        for top, names in list(by_top.items())[:TOPS_LIMIT]:
            if top in self.rejected:
                continue
            known = self.offered.get(top) or (
                self.learned[top].library if top in self.learned else None)
            library = known or self.locate(top)
            if library is None:
                continue
            extended = with_modules(library, names)
            room = known is not None or len(self.learned) + len(self.offered) < LIBRARIES_LIMIT
            if room and (known is None or extended.modules != known.modules):
                self.offered[top] = extended
                self.quiet_since = time.monotonic()

    def locate(self, name: str) -> Library | None:
        if len(self.roots) + len(self.writable) >= FOLDERS_LIMIT:
            return None  # too many folders to tell: learn nothing more
        return locate(name, self.roots, self.writable)

    def note_roots(self, roots: object, writable: object = ()) -> None:
        """Folders whose code is the user's (workspace, project roots) or that a job may
        write to: nothing is learned from there, and what was is dropped."""
        new_roots = _absolute(roots) - self.roots
        new_writable = _absolute(writable) - self.writable
        if not new_roots and not new_writable:
            return
        self.roots |= new_roots
        self.writable |= new_writable
        set_origins(self.origins())
        for name in [n for n, lib in self.offered.items() if self.locate(lib.name) is None]:
            del self.offered[name]
        untrusted = [name for name in self.learned if self.locate(name) is None]
        if untrusted:
            for name in untrusted:
                del self.learned[name]
                self.log(f"{name} lies in a workspace or a folder jobs may write to: job "
                         f"processes import it themselves")
            self.pool.set_libraries(self.preload())

    def origins(self) -> Origins:
        """Where a preloading zygote's imports may come from now."""
        roots = tuple(sorted({*self.roots, *map(os.path.realpath, self.roots)}))
        writable = tuple(sorted({*self.writable, *map(os.path.realpath, self.writable)}))
        loaded = [place for place in loaded_places(
            module for name, module in list(sys.modules.items()) if "." not in name)
            if not any(place == r or place.startswith(r + os.sep) for r in roots)]
        return Origins(tuple(interpreter_folders() + loaded), tuple(sorted(target_folders())),
                       roots, writable)

    def due_in(self) -> float | None:
        """Seconds until what was offered may be learned; None: nothing to learn."""
        if not self.offered or self.rounds >= ROUNDS_LIMIT:
            return None
        return max(0.0, self.quiet_since + QUIET_S - time.monotonic())

    def tick(self, cores_busy: bool) -> None:
        """In the worker's loop: learn what was offered, once quiet, unless jobs take every
        core (under a stream of saves that take longer than their gaps, learning must not
        wait for a moment without jobs: it would never come)."""
        due = self.due_in()
        if due is not None and due <= 0 and not cores_busy:
            self.rounds += 1
            self.learned.update({name: learned(lib) for name, lib in self.offered.items()})
            self.offered.clear()
            self.pool.set_libraries(self.preload())

    def preload(self) -> Preload:
        return tuple(tuple(self.learned[top].library.names()) for top in sorted(self.learned))

    # ------------------------------------------------------------ jobs
    def refuse_for(self, sources: tuple[str, ...],
                   writable: tuple[str, ...] = ()) -> frozenset[str]:
        """The learned libraries a job with ``sources`` (its document, project root) and
        allowed to write to ``writable`` must run without; first, the job's project root
        and ``writable`` are noted (``note_roots``) and libraries changed on disk dropped."""
        self.note_roots(sources[1:2], writable)
        if not self.learned:
            return frozenset()
        if writable:
            return frozenset(self.learned)
        self._drop([name for name, item in self.learned.items()
                    if quick_fingerprint(item.library) != item.quick])
        return frozenset(conflicts((item.library for item in self.learned.values()), sources))

    def after_job(self) -> None:
        """Between jobs: the thorough check, every file of each learned library's modules."""
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

    # ------------------------------------------------------------ zygote news
    def zygote_news(self, news: News, libraries: frozenset[str]) -> Preload:
        """A zygote asked to import ``libraries`` is ready, without those it left out and
        with the installed libraries they imported (learned too: a job must run without
        them as well where they are its own code); or it has ended, naming the one to
        blame, else the libraries it was the first to import are. Returns what the zygote
        has imported, if it is ready."""
        why = dict(news.left_out)
        if news.ready:
            for name in news.loaded:
                library = None if name in self.learned or name in why else self.locate(name)
                if library is not None and len(self.learned) < LIBRARIES_LIMIT:
                    self.learned[name] = learned(library)
            kept = sorted(libraries - set(why))
            self.log(f"job processes start with {', '.join(kept) or 'no library'} imported")
        elif not why:
            current = set().union(*(z.preloaded for z in self.pool.zygotes.values()))
            new = sorted(libraries - current) or sorted(libraries)
            why = dict.fromkeys(new, "a zygote importing it ended")
        for name, reason in why.items():
            self.learned.pop(name, None)
            self.offered.pop(name, None)
            self.rejected[name] = reason
            self.log(f"{name} is left out of the job processes' imports: {reason}")
        if news.ready:
            return self.preload()
        self.pool.set_libraries(self.preload())
        return ()


def _absolute(paths: object) -> set[str]:
    if not isinstance(paths, (list, tuple)):
        return set()
    return {os.path.abspath(p) for p in list(paths)[:FOLDERS_LIMIT]
            if isinstance(p, str) and os.path.isabs(p) and "\0" not in p}
