"""Which files a document depends on, and which files may show its diagnostics.

Saving ``layers.py`` changes what ``net.py`` traces when ``net.py`` uses a class of it, so
the server re-analyses the open documents that depend on a saved file. "Depends" is decided
simply and errs on the side of re-analysing: the document's last report touched the file
(a diagnostic, related or node span in it), or its text imports a module of that name.

>>> imports_file("from .layers import Block\\n", "/p/layers.py")
True
>>> imports_file("import torch.nn as nn\\n", "/p/layers.py")
False
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from fxls.report import FileReport, Span
from fxls.result_cache.dependencies import names_imported

#: installed-library locations: never published to, even inside the workspace (a venv)
_LIBRARY_MARKERS = ("site-packages", "dist-packages")

def report_files(report: FileReport) -> set[str]:
    """Resolved paths of every file the report's spans point into."""
    spans: list[Span] = []
    for item in report.diagnostics:
        spans.append(item.span)
        spans.extend(r.span for r in item.related)
    for module in [*report.modules, *report.graphs]:
        if module.span is not None:
            spans.append(module.span)
        for node in module.nodes:
            if node.span is not None:
                spans.append(node.span)
    return {_resolved(file) for file in {s.file for s in spans}}


def imported_names(text: str) -> set[str]:
    """Dotted names in the import statements of ``text``: ``import a.b`` -> ``a.b``;
    ``from .a import b, c as d`` -> ``a``, ``a.b``, ``a.c``; ``from . import b`` -> ``b``
    (the statements as the result cache finds them: ``names_imported``)."""
    names: set[str] = set()
    for _, module, taken in names_imported(text):
        if module:
            names.add(module)
        names.update(f"{module}.{name}" if module else name for name in taken)
    return names


def module_name(path: str) -> str:
    """The last component of the module a file defines: ``layers`` for ``.../layers.py``,
    ``pkg`` for ``.../pkg/__init__.py``."""
    file = Path(path)
    return file.parent.name if file.stem == "__init__" else file.stem


def imports_file(text: str, path: str) -> bool:
    """Whether an import statement of ``text`` names the module defined by ``path``."""
    name = module_name(path)
    return any(name in dotted.split(".") for dotted in imported_names(text))


def depends_on(report: FileReport | None, text: str, path: str) -> bool:
    """Whether a document (its last report and its text) depends on the file ``path``."""
    if report is not None and _resolved(path) in report_files(report):
        return True
    return imports_file(text, path)


def is_project_file(path: str, roots: Iterable[str]) -> bool:
    """A file under one of ``roots`` (workspace folders, the project root) and not in an
    installed library: a file the server may publish diagnostics to."""
    resolved = Path(_resolved(path))
    if any(marker in resolved.parts for marker in _LIBRARY_MARKERS):
        return False
    for root in roots:
        if not root:
            continue
        try:
            resolved.relative_to(_resolved(root))
        except ValueError:
            continue
        return True
    return False


def _resolved(file: str) -> str:
    # realpath, not Path.resolve: a symbolic-link loop is a path, not a RuntimeError
    return os.path.realpath(file)
