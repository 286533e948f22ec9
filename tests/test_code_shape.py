"""The shape the code keeps (issue 32): no function over 80 lines and no class over 15
attributes in fxls/ and fxcore/ (``scripts/class_attributes.py`` counts what an instance
carries)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("fxls", "fxcore")


def _script():
    spec = importlib.util.spec_from_file_location(
        "class_attributes", ROOT / "scripts" / "class_attributes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_over_80_lines(package: str) -> None:
    long = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length}")
    assert long == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_class_over_15_attributes(package: str) -> None:
    script = _script()
    big = [f"{path}:{line} {name}: {len(names)}"
           for path, line, name, names in script.classes(ROOT / package) if len(names) > 15]
    assert big == []
