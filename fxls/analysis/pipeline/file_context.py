"""The analysed file as every stage sees it, immutable, known in two steps.

``SourceFile`` is what is known before the file runs: its path, text, syntax tree, pragmas
and settings, the module it is imported as, and which folders are the user's own (spans in
them are reported). ``FileContext`` adds what running it gave: its namespace and classes,
the leaf modules and autowrapped functions every trace of it uses, the project's rewrite
rules.
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fxcore
import fxls
from fxcore.source import SourceSpan
from fxls.analysis.loading import parse_source
from fxls.analysis.packages import ModuleLocation, locate_module
from fxls.analysis.pragmas import FilePragmas, parse_pragmas
from fxls.analysis.user_rules import UserRule
from fxls.project.settings import Settings
from fxls.project.source_text import SourceText, source_text

_SITE_MARKERS = ("site-packages", "dist-packages")
#: fxcore's and fxls's own folders: inside a project root when fxls's checkout is the project
#: (its examples/), but their frames are the analysis, never the user's code
_OWN_PACKAGES = tuple(f"{Path(package.__file__).parent}/" for package in (fxcore, fxls))


@dataclass(frozen=True)
class SourceFile:
    """The file before it runs."""

    filename: str  # absolute
    source: str
    text: SourceText
    tree: ast.AST | None  # None: executing it reports the syntax error (FX100)
    settings: Settings
    root: str  # the project root, else the file's folder
    pragmas: FilePragmas
    location: ModuleLocation
    #: folders of the user's own code (see ``own_folders``)
    own_folders: tuple[str, ...]
    #: the parsed texts of other files spans point into, as they are asked for
    other_trees: dict[str, ast.AST | None] = field(default_factory=dict, repr=False,
                                                   compare=False)

    @classmethod
    def read(cls, path: str, source: str, settings: Settings) -> SourceFile:
        filename = str(Path(path).resolve())
        tree = parse_source(source)
        project_root = Path(settings.project.root) if settings.project.root else None
        location = locate_module(Path(filename), project_root, settings.project.roots,
                                 tree if isinstance(tree, ast.Module) else None)
        return cls(filename, source, source_text(source), tree, settings,
                   settings.project.root or str(Path(filename).parent), parse_pragmas(source, tree),
                   location, own_folders(settings.project.root, location, filename))

    @property
    def module_tree(self) -> ast.Module | None:
        return self.tree if isinstance(self.tree, ast.Module) else None

    def first_line(self) -> SourceSpan:
        """Where problems of the file as a whole are shown (settings it cannot use)."""
        return SourceSpan(self.filename, 1, 1, 0, self.text.byte_length(1))

    def tree_of(self, filename: str) -> ast.AST | None:
        """The parsed text of this file or of another file a span points into."""
        if filename == self.filename:
            return self.tree
        if filename not in self.other_trees:
            self.other_trees[filename] = parse_source("".join(linecache.getlines(filename)))
        return self.other_trees[filename]

    def text_of(self, filename: str) -> SourceText:
        """The text of this file, or of another file a span points into as Python read it."""
        if filename == self.filename:
            return self.text
        return source_text("".join(linecache.getlines(filename)))

    def is_reportable(self, candidate: str) -> bool:
        """This file, another file of its package, or of the project (not an installed
        package)."""
        if candidate == self.filename:
            return True
        project, *packages = self.own_folders or (self.root,)
        if any(candidate.startswith(f"{folder.rstrip('/')}/") for folder in packages):
            return True  # the file's own package, even where pip installed it
        return (candidate.startswith(f"{project.rstrip('/')}/")
                and not any(m in candidate for m in _SITE_MARKERS)
                and not candidate.startswith(_OWN_PACKAGES))


def own_folders(project_root: str, location: ModuleLocation, filename: str) -> tuple[str, ...]:
    """The folders whose files are the user's own (their spans are reported): the project
    root, and the folder of the file's top package (when it runs inside a package, its
    siblings are the user's code even outside the project root, e.g. checked in place)."""
    folders = [project_root or str(Path(filename).parent)]
    top = location.name.partition(".")[0]
    if location.package:
        folders.append(str(Path(location.import_root) / top))
    return tuple(folders)


@dataclass(frozen=True)
class FileContext:
    """The file after it ran: what every class of it is built, traced and checked with."""

    file: SourceFile
    module_name: str
    namespace: dict[str, Any]
    definitions: dict[str, ast.ClassDef]
    #: its nn.Module classes, in the order they are reported
    classes: tuple[type, ...]
    #: qualified names of the classes traced as leaf modules
    leaf_names: tuple[str, ...]
    #: functions recorded as one call_function node
    autowrap: tuple[Any, ...]
    #: leaf classes that imported libraries declared (name -> who declared it)
    declared_leaves: dict[str, str]
    user_rules: tuple[UserRule, ...]
