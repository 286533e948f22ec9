"""The workspace files a file's result depends on besides its own text, found without
running anything: what its imports resolve to in the folders the analysis imports from,
followed through the imports of those files; the ``__init__.py`` of the packages above it;
the modules of its entry points and pass models and its rule files; and, when its targets
are inferred, the Python files that inference reads (``fxls.analysis.target_choice``: the
file's folder and the top of the project root).

It errs on the side of more files: one too many costs a cache miss, one too few a stale
result. Imports are found by a pattern over the text (a word ``import`` in a string counts
too), not by parsing: fast on a library's hundreds of files. Installed libraries are not
followed, except the one the file itself belongs to: ``environment`` versions them. Imports
by computed name (``importlib.import_module(name)``) and data files the code opens are not
seen here: the job lists what it read (``fxls.project.files_read``), and a lookup checks
those.

>>> sorted(names_imported("from .layers import Block\\nimport a.b as c, d\\n"))
[(0, 'a.b', ()), (0, 'd', ()), (1, 'layers', ('Block',))]
>>> sorted(names_imported("from . import (\\n    heads,\\n    necks,\\n)\\n"))
[(1, '', ('heads', 'necks'))]
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator

from fxls.project.files import read_regular_file
from fxls.project.settings import Settings
from fxls.worker.installed_libraries import import_roots

#: more files than this and the result is not cached (a file too few would be stale)
MAX_FILES = 5000
#: files read for their digest and imports up to this size (a bigger one: its first bytes)
MAX_READ_BYTES = 8 << 20
_INSTALLATION_MARKS = (".dist-info", ".egg-info")

#: an import: how many dots, the dotted module, the names a ``from`` import takes
Import = tuple[int, str, tuple[str, ...]]
#: a folder absolute imports resolve in, and the only top-level package followed there
#: (``""``: any; an installation folder: the file's own library alone)
Root = tuple[str, str]

_IMPORT = re.compile(
    r"(?:^|[;:])[ \t]*(?:from[ \t]+(?P<source>\.*[ \t]*[\w.]*)[ \t]+import[ \t]*"
    r"(?P<names>\([^)]*\)|[^#\n;]*(?:\\\n[^#\n;]*)*)"
    r"|import[ \t]+(?P<modules>[^#\n;]*(?:\\\n[^#\n;]*)*))",
    re.MULTILINE,
)


def names_imported(text: str) -> set[Import]:
    """The import statements of a Python text (and anything in it that looks like one)."""
    found: set[Import] = set()
    for match in _IMPORT.finditer(text):
        if match.group("modules") is not None:
            found.update((0, name, ()) for name in _names(match.group("modules")))
            continue
        source = match.group("source").replace(" ", "").replace("\t", "")
        module = source.lstrip(".")
        names = tuple(_names(match.group("names")))
        found.add((len(source) - len(module), module, names))
    return found


def _names(clause: str) -> Iterator[str]:
    """``(a.b as c,\\n d)`` -> ``a.b``, ``d``: the names imported, aliases dropped."""
    for part in re.sub(r"[()\\\n]", " ", clause).split(","):
        words = part.split()
        if words and all(piece.isidentifier() for piece in words[0].split(".")):
            yield words[0]


class WorkspaceFiles:
    """A snapshot of the workspace for one run: each file's digest, imports and existence
    are read once and kept (a file created or changed while it lives is not seen: make one
    per ``fxls check`` run, or per fingerprint in the editor)."""

    def __init__(self) -> None:
        self._digests: dict[str, str] = {}
        self._imports: dict[str, set[Import]] = {}
        self._is_file: dict[str, bool] = {}
        self._is_folder: dict[str, bool] = {}
        self._installations: dict[str, bool] = {}
        self._runs: dict[tuple[str, tuple[Root, ...]], tuple[str, ...]] = {}
        self._modules: dict[tuple[str, tuple[Root, ...]], tuple[str, ...]] = {}
        self._python_files: dict[str, tuple[str, ...]] = {}

    def is_file(self, path: str) -> bool:
        known = self._is_file.get(path)
        if known is None:
            known = self._is_file[path] = os.path.isfile(path)
        return known

    def is_folder(self, path: str) -> bool:
        known = self._is_folder.get(path)
        if known is None:
            known = self._is_folder[path] = os.path.isdir(path)
        return known

    def is_installation(self, folder: str) -> bool:
        """Whether ``folder`` holds installed distributions (a site folder, ``pip install
        --target``)."""
        known = self._installations.get(folder)
        if known is None:
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            known = any(name.endswith(_INSTALLATION_MARKS) for name in names)
            self._installations[folder] = known
        return known

    def digest(self, path: str) -> str:
        """The hex digest of the file's bytes; ``-`` when it cannot be read as a file."""
        known = self._digests.get(path)
        if known is None:
            data = self._read(path)
            known = "-" if data is None else hashlib.sha256(data).hexdigest()
            self._digests[path] = known
        return known

    def imports(self, path: str) -> set[Import]:
        known = self._imports.get(path)
        if known is None:
            data = self._read(path)
            text = "" if data is None else data.decode("utf-8", "replace")
            known = self._imports[path] = names_imported(text)
        return known

    def runs(self, path: str, roots: tuple[Root, ...]) -> tuple[str, ...]:
        """The files the imports of the file ``path`` may run, absolute ones found in
        ``roots``."""
        known = self._runs.get((path, roots))
        if known is None:
            known = tuple(dict.fromkeys(_resolved(path, self.imports(path), roots, self)))
            self._runs[path, roots] = known
        return known

    def module_files(self, dotted: str, roots: tuple[Root, ...]) -> tuple[str, ...]:
        """Every file ``import dotted`` may run below ``roots``."""
        known = self._modules.get((dotted, roots))
        if known is None:
            known = tuple(_module_files(dotted, roots, self))
            self._modules[dotted, roots] = known
        return known

    def python_files_in(self, folder: str) -> tuple[str, ...]:
        """The ``.py`` files directly in ``folder`` (a real path)."""
        known = self._python_files.get(folder)
        if known is None:
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                names = []
            known = tuple(os.path.join(folder, name) for name in names if name.endswith(".py"))
            self._python_files[folder] = known
        return known

    def _read(self, path: str) -> bytes | None:
        try:  # a FIFO or a device named *.py is refused, never read
            return read_regular_file(path, MAX_READ_BYTES)
        except OSError:
            return None


def dependencies(path: str, source: str, settings: Settings,
                 files: WorkspaceFiles) -> list[str] | None:
    """The real paths of the files the result of ``path`` (whose text is ``source``) depends
    on, sorted, itself left out; None when there are more than ``MAX_FILES``."""
    document = os.path.realpath(path)
    roots = _import_roots(document, settings, files)
    run = set(_package_inits(os.path.dirname(document), files))
    run.update(_rule_files(settings, files))
    for module in _entry_modules(settings):
        run.update(files.module_files(module, roots))
    run.update(_resolved(document, names_imported(source), roots, files))
    waiting = list(run)
    while waiting:
        if len(run) > MAX_FILES:
            return None
        for found in files.runs(waiting.pop(), roots):
            if found not in run:
                run.add(found)
                waiting.append(found)
    read = set() if settings.tracers.targets else _inference_files(document, settings, files)
    return sorted((run | read) - {document})


def _import_roots(document: str, settings: Settings, files: WorkspaceFiles
                  ) -> tuple[Root, ...]:
    """Where absolute imports may resolve: the analysis's import roots, the configured
    ``roots`` and ``src/``, and PYTHONPATH's folders; in an installation folder, only the
    library the document belongs to."""
    project = settings.project.root or None
    project = os.path.realpath(project) if project else None
    folders = set(import_roots(document, project))
    if project is not None:
        folders.update(os.path.realpath(os.path.join(project, root))
                       for root in [*settings.project.roots, "src"])
    folders.update(os.path.realpath(entry) for entry in
                   os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(entry))
    roots = []
    for folder in sorted(folders):
        if not os.path.isdir(folder):
            continue
        if not files.is_installation(folder):
            roots.append((folder, ""))
        elif document.startswith(folder + os.sep):
            own = os.path.relpath(document, folder).split(os.sep)[0]
            roots.append((folder, own.removesuffix(".py")))
    return tuple(roots)


def _resolved(importer: str, imports: Iterable[Import], roots: tuple[Root, ...],
              files: WorkspaceFiles) -> Iterator[str]:
    """The files ``importer``'s imports may run."""
    for level, module, names in imports:
        wanted = [f"{module}.{name}" if module else name for name in names]
        if module:
            wanted.append(module)
        if level == 0:
            for dotted in wanted:
                yield from files.module_files(dotted, roots)
            continue
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        if files.is_file(os.path.join(base, "__init__.py")):
            yield os.path.join(base, "__init__.py")
        for dotted in wanted:
            yield from files.module_files(dotted, ((base, ""),))


def _module_files(dotted: str, roots: tuple[Root, ...], files: WorkspaceFiles
                  ) -> Iterator[str]:
    """Every file ``import dotted`` may run below ``roots``: the packages' ``__init__.py``
    on the way and the module's own file."""
    parts = dotted.split(".")
    for root, only in roots:
        if (only and parts[0] != only) or not _may_hold(root, parts[0], files):
            continue
        folder = root
        for part in parts[:-1]:
            folder = os.path.join(folder, part)
            if files.is_file(os.path.join(folder, "__init__.py")):
                yield os.path.realpath(os.path.join(folder, "__init__.py"))
        last = os.path.join(folder, parts[-1])
        for candidate in (os.path.join(last, "__init__.py"), last + ".py"):
            if files.is_file(candidate):
                yield os.path.realpath(candidate)


def _may_hold(root: str, top: str, files: WorkspaceFiles) -> bool:
    """Whether ``root`` has a module or package ``top`` (most imports are libraries')."""
    return files.is_file(os.path.join(root, top + ".py")) or files.is_folder(
        os.path.join(root, top))


def _package_inits(folder: str, files: WorkspaceFiles) -> Iterator[str]:
    """The ``__init__.py`` of the packages a file in ``folder`` runs inside."""
    while files.is_file(os.path.join(folder, "__init__.py")):
        yield os.path.join(folder, "__init__.py")
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _rule_files(settings: Settings, files: WorkspaceFiles) -> Iterator[str]:
    root = settings.project.root
    for rule_file in settings.tracing.rule_files:
        path = os.path.realpath(os.path.join(root, rule_file))
        if files.is_file(path):
            yield path


def _entry_modules(settings: Settings) -> Iterator[str]:
    """The modules of ``entry_points`` and ``pass_models`` (``pkg.models:build(2)``)."""
    for entry in [*settings.project.entry_points, *settings.project.pass_models]:
        module = entry.partition(":")[0].strip()
        if module and all(part.isidentifier() for part in module.split(".")):
            yield module


def _inference_files(document: str, settings: Settings, files: WorkspaceFiles) -> set[str]:
    """The ``.py`` files beside the document and at the top of the project root."""
    root = settings.project.root
    found = set(files.python_files_in(os.path.dirname(document)))
    if root:
        found.update(files.python_files_in(os.path.realpath(root)))
    return found
