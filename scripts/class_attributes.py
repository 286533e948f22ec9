"""List the classes with more than ``--max`` attributes (default 15) under the given folders
(default ``fxls``), most first; exit 1 if there is one.

A class's attributes are the names it binds in its body (annotated fields, plain class
attributes; not methods, ``ClassVar`` annotations or ``__slots__``-like dunders) and the
names its methods assign on ``self`` (``self.x = ...``, ``self.x: T = ...``, augmented
assignments too), less the names the class defines as properties (``self.args = ...`` going
through a property's setter stores ``_args``, already counted): what an instance carries,
read from the source alone.

    .venv/bin/python scripts/class_attributes.py fxls --max 15
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path


def _is_class_var(annotation: ast.expr) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (isinstance(target, ast.Name) and target.id == "ClassVar") or (
        isinstance(target, ast.Attribute) and target.attr == "ClassVar")


def _self_targets(node: ast.AST) -> Iterator[str]:
    """Names assigned on ``self`` anywhere inside ``node`` (a method)."""
    for inner in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(inner, ast.Assign):
            targets = list(inner.targets)
        elif isinstance(inner, ast.AnnAssign | ast.AugAssign):
            targets = [inner.target]
        for target in targets:
            for element in ast.walk(target):
                if (isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name)
                        and element.value.id == "self"):
                    yield element.attr


def attributes(cls: ast.ClassDef) -> set[str]:
    """The attribute names of ``cls`` (see the module's docstring)."""
    names: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            if not _is_class_var(statement.annotation):
                names.add(statement.target.id)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            names.update(_self_targets(statement))
    properties = {statement.name for statement in cls.body
                  if isinstance(statement, ast.FunctionDef) and any(
                      isinstance(d, ast.Name) and d.id == "property"
                      for d in statement.decorator_list)}
    return {name for name in names - properties
            if not (name.startswith("__") and name.endswith("__"))}


def classes(folder: Path) -> Iterator[tuple[str, int, str, set[str]]]:
    """(file, line, class name, attributes) of every class defined under ``folder``."""
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                yield str(path), node.lineno, node.name, attributes(node)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", default=["fxls"])
    parser.add_argument("--max", type=int, default=15, help="most attributes allowed")
    args = parser.parse_args(argv)
    found = [entry for folder in args.folders for entry in classes(Path(folder))
             if len(entry[3]) > args.max]
    for path, line, name, names in sorted(found, key=lambda e: (-len(e[3]), e[0], e[1])):
        print(f"{path}:{line}: {name}: {len(names)} attributes: {', '.join(sorted(names))}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
