"""Where code imported outside a job may come from: the interpreter's own installation, and
nothing a workspace or a job controls.

A preloading zygote (``fxls.worker.zygote``) imports learned libraries, and whatever they
import in turn, with the worker's ``sys.path``: absolute PYTHONPATH entries come before the
site folders, so a folder inside a workspace (``PYTHONPATH=<ws>/src``) could shadow any
module a library imports (``yaml``, ``packaging``...), and an editable install's finder
leads into a project. ``Origins`` says which files may be imported; ``only_from`` puts a
finder first on ``sys.meta_path`` that refuses (``ImportError``) a module found anywhere
else, before any of its code runs.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType


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
    from fxls.worker.libraries import site_folders

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


def _under_any(path: str, folders: Iterable[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)
