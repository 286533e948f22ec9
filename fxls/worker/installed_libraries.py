"""Third-party libraries the worker may learn from its jobs: which names qualify, where a
library lives, whether it changed on disk, and which libraries a job must run without.

A job reports the modules it imported (untrusted: it runs hostile code). The worker keeps a
name only if it checks out here, against the worker's own view of the interpreter: a plain
top-level name that is not the standard library, not fxls, fxcore or torch, not loaded by the
worker already, found by the path finder (never an editable install's finder, which points
into a project) as a regular package or a module file directly in an *installed-library
folder*. That is a site folder of the running interpreter's own installation
(``site_folders``, by real path: a project's ``.venv`` when the user chose to run it), or a
folder of ``sys.path`` outside it that holds ``*.dist-info`` (``pip install --target`` on
PYTHONPATH) and lies, as written and resolved, outside every workspace and project root the
worker was told of (``roots``). Neither may overlap a folder a job was allowed to write to
(``writable``): learned code runs outside any job (``fxls.worker.library_learner``), so nothing a
repository holds or a job could have written is learned. Whether a job's own code is, or
would be shadowed by, a library is decided per job (``conflicts``). A submodule is kept only
if it is a file of that package.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import site
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

#: module names of one frame looked at
NAMES_LIMIT = 4000
#: submodules learned per library (transformers' BERT imports ~300)
MODULES_LIMIT = 2000
#: files of one library whose stats make its fingerprint
FILES_LIMIT = 5000
#: libraries learned at once
LIBRARIES_LIMIT = 64
#: top-level names of one frame looked up (most are the standard library's)
TOPS_LIMIT = 400

_TOP = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}\Z")
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\Z")
#: never learned: ours, torch's (handled by ``worker_imports``), and the interpreter's hooks
_NEVER = frozenset({"fxls", "fxcore", "torch", "site", "sitecustomize", "usercustomize",
                    "conftest", "setup", "test", "tests", "__main__"})
#: parts of a module name never learned: programs and test helpers (argv parsing, fixtures)
_REFUSED_PARTS = frozenset({"__main__", "test", "tests", "testing", "_testing", "conftest"})

Stat = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Library:
    """An installed library, as the worker's interpreter finds it."""

    name: str
    #: its package folder, or its module file (real paths)
    place: str
    #: the installed-library folder holding it (a real path)
    folder: str
    #: submodules to import with it (files of the package, checked), and names a file
    #: imports from them (``from transformers import BertModel``: a lazy package imports
    #: the submodule then), sorted
    modules: tuple[str, ...] = field(default=())

    @property
    def is_package(self) -> bool:
        return os.path.isdir(self.place)

    def names(self) -> list[str]:
        """What a zygote imports for it, in order."""
        return [self.name, *self.modules]


def locate(name: str, roots: Iterable[str] = (), writable: Iterable[str] = ()) -> Library | None:
    """The library ``name`` names, if it qualifies (see the module doc); ``roots`` and
    ``writable`` are absolute paths (both their written and resolved forms count)."""
    if (not isinstance(name, str) or not _TOP.match(name) or name in _NEVER
            or name in sys.stdlib_module_names or name in sys.builtin_module_names
            or name in sys.modules):
        return None
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, OSError, ValueError):
        return None
    if spec is None or not spec.has_location or not spec.origin:
        return None  # a namespace package spans folders: not learned
    found_at = os.path.abspath(spec.origin)
    origin = os.path.realpath(spec.origin)
    if spec.submodule_search_locations:
        place = os.path.dirname(origin)
        if os.path.basename(origin) != "__init__.py":
            return None
    else:
        place = origin
    folder = os.path.dirname(place)
    writable = _both_forms(writable)
    if folder in site_folders():
        refused = _overlaps(place, writable)
    elif folder in target_folders():
        roots = _both_forms(roots)
        refused = _overlaps(place, [*roots, *writable]) or _overlaps(found_at, roots)
    else:
        return None
    return None if refused else Library(name, place, folder)


def with_modules(library: Library, names: Iterable[str]) -> Library:
    """``library`` with those of ``names`` that are its submodules' files, or a name in the
    library or one of those (``a.b.C``), added."""
    if not library.is_package:
        return library
    found = set(library.modules)
    for name in names:
        if len(found) >= MODULES_LIMIT:
            break
        if not isinstance(name, str) or name in found:
            continue
        parent, _, last = name.rpartition(".")
        if _is_submodule_file(library, name) or (
                _PART.match(last) and not last.startswith("__") and last not in _REFUSED_PARTS
                and (parent == library.name or _is_submodule_file(library, parent))):
            found.add(name)
    return Library(library.name, library.place, library.folder, tuple(sorted(found)))


def _is_submodule_file(library: Library, name: str) -> bool:
    top, _, rest = name.partition(".")
    parts = rest.split(".")
    if top != library.name or not rest or len(parts) > 12 or _REFUSED_PARTS.intersection(parts):
        return False
    if not all(_PART.match(part) for part in parts):
        return False
    base = os.path.join(library.place, *parts)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path) and os.path.realpath(path).startswith(library.place + os.sep):
            return True
    return False


@cache
def site_folders() -> frozenset[str]:
    """The site folders of the running interpreter's own installation (real paths): those
    ``site`` set up and sysconfig's purelib and platlib; the user's site folder only where the
    interpreter puts it on ``sys.path`` itself (``pip install --user``: what a plain
    ``python`` of this user imports). Not PYTHONPATH, not ``.pth`` entries."""
    paths = [*site.getsitepackages(), sysconfig.get_path("purelib"),
             sysconfig.get_path("platlib")]
    if site.ENABLE_USER_SITE:
        paths.append(site.getusersitepackages())
    return frozenset(os.path.realpath(p) for p in paths if p and os.path.isdir(p))


@cache
def target_folders() -> frozenset[str]:
    """The other folders of the worker's ``sys.path`` with ``*.dist-info`` in them (``pip
    install --target`` put on PYTHONPATH), real paths; trusted only outside the roots
    (``locate``). ``sys.path`` does not change in the worker."""
    found = set()
    for entry in sys.path:
        if entry and os.path.isdir(entry) and _holds_distributions(entry):
            found.add(os.path.realpath(entry))
    return frozenset(found - site_folders())


def library_folders() -> frozenset[str]:
    """Every folder a library may be learned from (some only outside the roots)."""
    return site_folders() | target_folders()


def _both_forms(paths: Iterable[str]) -> list[str]:
    found = []
    for path in paths:
        if isinstance(path, str) and os.path.isabs(path):
            found += [os.path.abspath(path), os.path.realpath(path)]
    return list(dict.fromkeys(found))


def _overlaps(place: str, folders: Iterable[str]) -> bool:
    """``place`` is inside one of ``folders``, or holds one."""
    return any(_inside(place, f) or _inside(f, place) for f in folders)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _holds_distributions(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            return any(e.name.endswith(".dist-info") for e in entries)
    except OSError:
        return False


# ------------------------------------------------------------------ fingerprints
def quick_fingerprint(library: Library) -> tuple[Stat | None, ...]:
    """Stats that a ``pip install`` or a replaced package changes (a few stats, checked
    before every job): its installed-library folder (a new or removed ``*.dist-info``), its
    package folder, its ``__init__.py`` or module file."""
    paths = [library.folder, library.place]
    if library.is_package:
        paths.append(os.path.join(library.place, "__init__.py"))
    return tuple(_stat(path) for path in paths)


def full_fingerprint(files: Iterable[str]) -> tuple[Stat | None, ...]:
    """Stats of every file a library's import loaded (checked between jobs)."""
    return tuple(_stat(path) for path in files)


def _stat(path: str) -> Stat | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


def module_files(library: Library) -> list[str]:
    """The files of the modules a zygote imports for ``library`` (found, not imported)."""
    if not library.is_package:
        return [library.place]
    files = []
    for name in library.names()[:FILES_LIMIT]:
        base = os.path.join(library.place, *name.split(".")[1:])
        for path in (os.path.join(base, "__init__.py"), base + ".py"):
            if os.path.isfile(path):
                files.append(path)
                break
    return files


# ------------------------------------------------------------------ conflicts
def conflicts(libraries: Iterable[Library], sources: Iterable[str]) -> set[str]:
    """The libraries a job whose own code is ``sources`` (its document, then its project
    root) must run without: a source inside the library's files (the library is being
    analysed in place: its modules must come from the document, not from memory), or one of
    the job's possible import roots holding a module of the library's name (its own package
    of that name would be shadowed by the loaded library)."""
    paths = [os.path.realpath(s) for s in list(sources)[:2]
             if isinstance(s, str) and os.path.isabs(s)]
    found = set()
    above = import_roots(paths[0], paths[1] if len(paths) > 1 else None) if paths else set()
    for library in libraries:
        if _inside_any_path(library.place, paths):
            found.add(library.name)
            continue
        for folder in above:
            if folder == library.folder:
                continue
            if (os.path.exists(os.path.join(folder, library.name))
                    or os.path.exists(os.path.join(folder, library.name + ".py"))):
                found.add(library.name)
                break
    return found


def import_roots(document: str, project: str | None) -> set[str]:
    """Every folder the analysis may import a document's modules from
    (``fxls.analysis.packages``): its folder and the chain of package folders above it with
    the folder over the top one, the project root, and, for a document inside the project,
    every folder from it up to the project root (``src/``, configured roots)."""
    folder = os.path.dirname(document)
    roots = {folder}
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
        roots.add(folder)
    if project is not None:
        roots.add(project)  # always on the job's path (``loading.execute_file``)
    if project is not None and document.startswith(project.rstrip(os.sep) + os.sep):
        folder = os.path.dirname(document)
        while folder.startswith(project) and len(roots) < 64:
            roots.add(folder)
            folder = os.path.dirname(folder)
    return roots


def _inside_any_path(place: str, paths: list[str]) -> bool:
    return any(path == place or path.startswith(place + os.sep) for path in paths)
