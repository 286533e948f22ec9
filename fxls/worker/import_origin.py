"""Where code imported outside a job may come from: the interpreter's own installation, and
nothing a workspace or a job controls.

A preloading zygote (``fxls.worker.zygote``) imports learned libraries, and whatever they
import in turn, with the worker's ``sys.path``: absolute PYTHONPATH entries come before the
site folders, so a folder inside a workspace (``PYTHONPATH=<ws>/src``) could shadow any
module a library imports (``yaml``, ``packaging``...), and an editable install's finder
leads into a project. ``Origins`` says which files may be imported; ``only_from`` puts a
finder first on ``sys.meta_path`` that refuses (``ImportError``) a module found anywhere
else, before any of its code runs.

The worker's own imports (torch, its warm modules, what it learns after a job) go through
``outside_roots``: a module a workspace shadows is looked for further along ``sys.path``, as
if the workspace's folders were not there; the job processes forked from the worker, which
are sandboxed and import the user's code, search the whole path again.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType

from fxls.worker.installed_libraries import site_folders


@dataclass(frozen=True, slots=True)
class Origins:
    """Real paths (folders or files) that imported code may come from."""

    #: the interpreter's installation (standard library, site folders) and what the worker
    #: imported already: trusted unless a job could have written there
    installed: tuple[str, ...]
    #: installed-library folders outside the interpreter (``pip install --target`` on
    #: PYTHONPATH), outside every workspace and job-writable folder when they were chosen
    targets: tuple[str, ...] = ()
    #: workspace and project roots: never imported from, unless they hold the interpreter's
    #: own installation (a project's ``.venv`` that the user chose to run)
    roots: tuple[str, ...] = ()
    #: folders a job was allowed to write to: never imported from
    writable: tuple[str, ...] = ()

    def allows(self, path: str) -> bool:
        real = os.path.realpath(path)
        if _under_any(real, self.writable):
            return False
        if _under_any(real, self.installed):
            return True
        return _under_any(real, self.targets) and not _under_any(real, self.roots)


def interpreter_folders() -> list[str]:
    """The running interpreter's standard library and site folders (``site_folders``)."""
    paths = [sysconfig.get_path(key) for key in ("stdlib", "platstdlib")]
    return [os.path.realpath(p) for p in paths if p] + sorted(site_folders())


def loaded_places(modules: Iterable[ModuleType | None]) -> list[str]:
    """The package folders (or module files) of already imported top-level modules: the
    worker ran their code already (torch, fxls...), so their submodules are as trusted."""
    places = []
    for module in modules:
        path = getattr(module, "__path__", None)
        file = getattr(module, "__file__", None)
        if path is not None and file:
            places.append(os.path.realpath(os.path.dirname(file)))
        elif path is None and isinstance(file, str) and file:
            places.append(os.path.realpath(file))
    return places


class _OnlyFrom(importlib.abc.MetaPathFinder):
    def __init__(self, origins: Origins) -> None:
        self.origins = origins

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        later = sys.meta_path[sys.meta_path.index(self) + 1:] if self in sys.meta_path else []
        for finder in later:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                self._check(name, spec)
                return spec
        return None

    def _check(self, name: str, spec: importlib.machinery.ModuleSpec) -> None:
        places = list(spec.submodule_search_locations or [])
        if spec.has_location and spec.origin:
            places.append(spec.origin)
        elif not places:
            return  # built-in or frozen: part of the interpreter
        refused = [p for p in places if not self.origins.allows(p)]
        if refused:
            raise ImportError(f"{name} is not imported outside a job: {refused[0]} is not "
                              "part of the interpreter's installation", name=name)


@contextlib.contextmanager
def only_from(origins: Origins) -> Iterator[None]:
    """While inside: every module not imported yet comes from ``origins`` or is refused."""
    finder = _OnlyFrom(origins)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


class _OutsideRoots(importlib.abc.MetaPathFinder):
    """Takes ``PathFinder``'s place on ``sys.meta_path``: in the process that installed it,
    ``sys.path`` and package paths are searched without their folders inside a root (a
    module there is looked for further on, as if they were not on the path); a module
    another finder (an editable install's) finds inside a root is refused. In a fork (a job
    process, a zygote: it guards its own imports) it is ``PathFinder`` again (it stays on
    ``sys.meta_path``: the analysis checks that the user's code left that list alone)."""

    def __init__(self, trusted: Iterable[str]) -> None:
        self.pid = os.getpid()
        self.trusted = tuple(os.path.realpath(p) for p in trusted)
        self.roots: tuple[str, ...] = ()
        self._real: dict[str, str] = {}

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        finder = importlib.machinery.PathFinder
        if os.getpid() != self.pid or not self.roots:
            return finder.find_spec(name, path, target)
        entries = [e for e in (sys.path if path is None else path) if self._allows(e)]
        spec = finder.find_spec(name, entries, target)
        if spec is not None:
            return spec
        # the later finders are asked next, and nothing may skip one of their finds
        for later in sys.meta_path[sys.meta_path.index(self) + 1:]:
            find = getattr(later, "find_spec", None)
            found = find(name, path, target) if find is not None else None
            if found is not None and not all(map(self._allows, _places(found))):
                raise ModuleNotFoundError(f"{name} is not imported outside a job: it lies "
                                          "in a workspace", name=name)
            if found is not None:
                return None
        return None

    def find_distributions(self, context: importlib.metadata.DistributionFinder.Context
                           | None = None) -> Iterable[importlib.metadata.Distribution]:
        """``importlib.metadata`` asks ``sys.meta_path`` for installed distributions:
        ``PathFinder``'s answer, without the folders inside a root in this process."""
        finder = importlib.machinery.PathFinder
        context = context or importlib.metadata.DistributionFinder.Context()
        if os.getpid() != self.pid or not self.roots:
            return finder.find_distributions(context)
        allowed = [e for e in context.path if self._allows(e)]
        return finder.find_distributions(
            importlib.metadata.DistributionFinder.Context(name=context.name, path=allowed))

    def invalidate_caches(self) -> None:
        importlib.machinery.PathFinder.invalidate_caches()

    def _allows(self, entry: str) -> bool:
        """Not inside a root, or inside the interpreter's installation or fxls's own folder
        (a project's ``.venv`` the user chose to run, fxls's own checkout)."""
        real = self._real.get(entry)
        if real is None:
            real = self._real[entry] = os.path.realpath(entry or os.curdir)
        return not _under_any(real, self.roots) or _under_any(real, self.trusted)


_guard: _OutsideRoots | None = None


def outside_roots(trusted: Iterable[str], roots: Iterable[str]) -> None:
    """From now on, this process imports nothing from inside ``roots`` (more may be added
    with ``add_roots``) but what lies in ``trusted``; its forks are not affected."""
    global _guard
    if _guard is None:
        guard = _OutsideRoots(trusted)
        at = sys.meta_path.index(importlib.machinery.PathFinder)
        sys.meta_path[at] = _guard = guard
    add_roots(roots)


def add_roots(roots: object) -> None:
    """More workspace or project roots for ``outside_roots`` (absolute paths; others are
    ignored). Modules imported from them already stay (``outside_roots`` comes first)."""
    if _guard is None or not isinstance(roots, list | tuple):
        return
    found = {p for r in roots if isinstance(r, str) and os.path.isabs(r)
             for p in (os.path.abspath(r), os.path.realpath(r))}
    if not found <= set(_guard.roots):
        _guard.roots = tuple(sorted({*_guard.roots, *found}))


def _places(spec: importlib.machinery.ModuleSpec) -> list[str]:
    places = list(spec.submodule_search_locations or [])
    if spec.has_location and spec.origin:
        places.append(spec.origin)
    return places


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
