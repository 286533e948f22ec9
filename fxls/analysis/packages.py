"""Where a file lives in its project: the dotted module name it runs as, and the import root.

A file inside a package runs as its dotted module (``mypkg.models.net``), as ``python -m``
would run it from the folder that holds its top package; a lone script runs as a plain
module from its own folder. The rules, in order:

1. ``[tool.fxls] roots`` (folders relative to the project root): a file under one of them
   is named by its path below it; folders without ``__init__.py`` are namespace packages.
2. A file in a regular package (its folder has ``__init__.py``): the chain of folders with
   ``__init__.py`` above it gives the top package, imported from the folder above; under the
   project's ``src/`` the name extends up to ``src/`` through namespace folders, and so it
   does, outside the project, up to the site folder (``site-packages``, a ``PYTHONPATH``
   folder) that holds a namespace package (optimum's ``optimum/fx``: ``optimum.fx``).
3. A file under the project's ``src/``, or one with relative imports under the project root,
   is named by its path below that folder (namespace packages, PEP 420).
4. Anything else is a script: named by its stem, imported from its own folder.
"""

from __future__ import annotations

import ast
import os
import site
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True, slots=True)
class ModuleLocation:
    #: the module's dotted name (``mypkg.models.net``), or a script's plain name
    name: str
    #: the folder imports start from (first on ``sys.path`` while the file runs)
    import_root: str
    #: a package's ``__init__.py`` (runs as the package itself)
    is_package_init: bool = False

    @property
    def package(self) -> str:
        """``__package__``: the parent package, ``""`` for a top-level module or a script."""
        if self.is_package_init:
            return self.name
        return self.name.rpartition(".")[0]


def locate_module(
    path: Path, project_root: Path | None, roots: list[str], tree: ast.AST | None
) -> ModuleLocation:
    """The module ``path`` runs as (see the module docstring for the rules)."""
    path = path.resolve()
    project = project_root.resolve() if project_root is not None else None
    for root in _configured_roots(project, roots):
        location = _below(path, root)
        if location is not None:
            return location
    src = project / "src" if project is not None and (project / "src").is_dir() else None
    top = _top_regular_package(path.parent)
    if top is not None:
        base = top.parent
        if src is not None and base.is_relative_to(src):
            return _below(path, src) or _below(path, base) or _script(path)
        site = _site_folder_above(base) if project is None or not base.is_relative_to(
            project) else None  # the project's own packages are named from the project
        return (site and _below(path, site)) or _below(path, base) or _script(path)
    if src is not None:
        location = _below(path, src)
        if location is not None:
            return location
    if project is not None and _has_relative_imports(tree):
        location = _below(path, project)
        if location is not None:
            return location
    return _script(path)


def import_path(location: ModuleLocation, extra: tuple[str, ...], current: list[str]
                ) -> list[str]:
    """``sys.path`` as ``python -m`` would have it for ``location``: its import root first,
    whatever else is already on the path (``PYTHONPATH``, a site folder); then the other
    folders asked for (the project root), except those inside the file's own package: a
    package's folder is no import root, and its modules would shadow the package
    (``pkg/pkg.py`` imported as a top-level ``pkg``: "'pkg' is not a package")."""
    package = (Path(location.import_root) / location.name.partition(".")[0]
               if location.package else None)
    front = [location.import_root]
    for folder in extra:
        if folder and folder not in front and not (
                package is not None and Path(folder).resolve().is_relative_to(package)):
            front.append(folder)
    return front + [p for p in current if p not in front]


def loaded_siblings(module_name: str) -> list[ModuleType]:
    """The other modules of ``module_name``'s package that are already imported (by the
    package's ``__init__`` or the file itself), in name order: where the package's
    factories live (``fcos_resnet50_fpn`` beside ``anchor_utils``). None of a script."""
    package, _, _ = module_name.rpartition(".")
    if not package:
        return []
    prefix = f"{package}."
    return [module for name, module in sorted(sys.modules.items())
            if name.startswith(prefix) and "." not in name[len(prefix):]
            and name != module_name and isinstance(module, ModuleType)]


def _configured_roots(project: Path | None, roots: list[str]) -> list[Path]:
    base = project or Path.cwd()
    found = [(base / root).resolve() for root in roots]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)  # the deepest first


def _site_folder_above(folder: Path) -> Path | None:
    """The site folder (``site-packages``, a ``PYTHONPATH`` folder) ``folder`` is a
    namespace package of: below it, through folders that are all identifiers."""
    for holder in _site_folders():
        if folder != holder and folder.is_relative_to(holder) and all(
                part.isidentifier() for part in folder.relative_to(holder).parts):
            return holder
    return None


def _site_folders() -> list[Path]:
    folders = [*os.environ.get("PYTHONPATH", "").split(os.pathsep), *site.getsitepackages()]
    user_site = site.getusersitepackages()
    if isinstance(user_site, str):
        folders.append(user_site)
    return [Path(folder).resolve() for folder in folders if folder]


def _top_regular_package(folder: Path) -> Path | None:
    top = None
    while (folder / "__init__.py").is_file():
        top = folder
        if folder.parent == folder:
            break
        folder = folder.parent
    return top


def _below(path: Path, root: Path) -> ModuleLocation | None:
    """``path`` named by its parts below ``root``; None when it is not below or a part is not
    an identifier (such a folder cannot be imported)."""
    if not path.is_relative_to(root) or (path.parent == root and path.stem == "__init__"):
        return None
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_init = parts[-1] == "__init__"
    if is_init:
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    if not _top_name_is_free(parts[0], root):
        return None
    return ModuleLocation(".".join(parts), str(root), is_init)


def _top_name_is_free(top: str, root: Path) -> bool:
    """The top package is not already a different module of this process (``torch``...)."""
    loaded = sys.modules.get(top)
    if loaded is None:
        return True
    places = [getattr(loaded, "__file__", None), *(getattr(loaded, "__path__", None) or [])]
    return any(p and Path(p).resolve().is_relative_to(root) for p in places)


def _script(path: Path) -> ModuleLocation:
    stem = path.stem if path.stem.isidentifier() else "user_module"
    name, count = stem, 1
    while name in sys.modules:  # a module of that name, or this file analysed before here
        name, count = f"_fxls_{stem}" + (f"_{count}" if count > 1 else ""), count + 1
    return ModuleLocation(name, str(path.parent))


def _has_relative_imports(tree: ast.AST | None) -> bool:
    if not isinstance(tree, ast.Module):
        return False
    return any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(tree))
