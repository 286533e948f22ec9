"""The workspace files a file's result depends on besides its own text, found without
running anything: what its imports resolve to in the folders the analysis imports from,
followed through the imports of those files; the ``__init__.py`` of the packages above it;
the modules of its entry points and pass models and its rule files; and, when its targets
are inferred, the Python files that inference reads (``fxls.analysis.target_choice``: the
file's folder and the top of the project root).

It errs on the side of more files: one too many costs a cache miss, one too few a stale
result. Installed libraries are not followed (``environment`` versions them), nor imports
by computed name (``importlib.import_module(name)``), nor data files the code opens.

>>> sorted(names_imported("from .layers import Block\\nimport a.b as c\\n"))
[(0, 'a.b', ()), (1, 'layers', ('Block',))]
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterable, Iterator

from fxls.project.files import read_regular_file
from fxls.project.settings import Settings
from fxls.worker.installed_libraries import import_roots

#: more files than this and the result is not cached (a file too few would be stale)
MAX_FILES = 5000
#: files read for their digest up to this size (bigger ones: their first bytes and size)
MAX_READ_BYTES = 8 << 20
#: files parsed for their imports up to this size
MAX_PARSED_BYTES = 1 << 20

#: an import: how many dots, the dotted module, the names a ``from`` import takes
Import = tuple[int, str, tuple[str, ...]]


def names_imported(text: str | bytes) -> set[Import]:
    """The imports of a Python text (none when it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    found: set[Import] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            found.add((node.level, node.module or "", names))
    return found


class WorkspaceFiles:
    """A snapshot of the workspace for one run: each file's digest, imports and existence
    are read once and kept (a file created or changed while it lives is not seen: make one
    per ``fxls check`` run, or per fingerprint in the editor)."""

    def __init__(self) -> None:
        self._digests: dict[str, str] = {}
        self._imports: dict[str, set[Import]] = {}
        self._is_file: dict[str, bool] = {}

    def is_file(self, path: str) -> bool:
        known = self._is_file.get(path)
        if known is None:
            known = self._is_file[path] = os.path.isfile(path)
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
            parse = data is not None and len(data) <= MAX_PARSED_BYTES
            known = self._imports[path] = names_imported(data) if parse else set()
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
    roots = _import_roots(document, settings)
    run = set(_package_inits(os.path.dirname(document), files))
    run.update(_rule_files(settings, files))
    for module in _entry_modules(settings):
        run.update(_module_files(module, roots, files))
    waiting = list(run)
    for found in _resolved(document, names_imported(source), roots, files):
        if found not in run:
            run.add(found)
            waiting.append(found)
    while waiting:
        if len(run) > MAX_FILES:
            return None
        current = waiting.pop()
        for found in _resolved(current, files.imports(current), roots, files):
            if found not in run:
                run.add(found)
                waiting.append(found)
    read = set() if settings.tracers.targets else _inference_files(document, settings)
    return sorted((run | read) - {document})


def _import_roots(document: str, settings: Settings) -> list[str]:
    """The folders absolute imports may resolve in: the analysis's import roots, the
    configured ``roots`` and ``src/``, and PYTHONPATH folders that are not installations."""
    project = settings.project.root or None
    project = os.path.realpath(project) if project else None
    roots = set(import_roots(document, project))
    if project is not None:
        roots.update(os.path.realpath(os.path.join(project, root))
                     for root in [*settings.project.roots, "src"])
    roots.update(_plain_python_path())
    return sorted(root for root in roots if os.path.isdir(root))


def _plain_python_path() -> list[str]:
    """PYTHONPATH folders holding no ``*.dist-info``: code no version number describes."""
    plain = []
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        if not any(name.endswith((".dist-info", ".egg-info")) for name in names):
            plain.append(os.path.realpath(entry))
    return plain


def _resolved(importer: str, imports: Iterable[Import], roots: list[str],
              files: WorkspaceFiles) -> Iterator[str]:
    """The files ``importer``'s imports may run."""
    for level, module, names in imports:
        wanted = [f"{module}.{name}" if module else name for name in names]
        if module:
            wanted.append(module)
        if level == 0:
            for dotted in wanted:
                yield from _module_files(dotted, roots, files)
            continue
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        if files.is_file(os.path.join(base, "__init__.py")):
            yield os.path.join(base, "__init__.py")
        for dotted in wanted:
            yield from _module_files(dotted, [base], files)


def _module_files(dotted: str, roots: list[str], files: WorkspaceFiles) -> Iterator[str]:
    """Every file ``import dotted`` may run below ``roots``: the packages' ``__init__.py``
    on the way and the module's own file."""
    parts = dotted.split(".")
    if not all(part.isidentifier() for part in parts):
        return
    for root in roots:
        folder = root
        for part in parts[:-1]:
            folder = os.path.join(folder, part)
            if files.is_file(os.path.join(folder, "__init__.py")):
                yield os.path.realpath(os.path.join(folder, "__init__.py"))
        last = os.path.join(folder, parts[-1])
        for candidate in (os.path.join(last, "__init__.py"), last + ".py"):
            if files.is_file(candidate):
                yield os.path.realpath(candidate)


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
        if module:
            yield module


def _inference_files(document: str, settings: Settings) -> set[str]:
    """The ``.py`` files beside the document and at the top of the project root."""
    found = set()
    for folder in {os.path.dirname(document), settings.project.root}:
        try:
            names = os.listdir(folder) if folder else []
        except OSError:
            continue
        found.update(os.path.realpath(os.path.join(folder, name)) for name in names
                     if name.endswith(".py"))
    return found
