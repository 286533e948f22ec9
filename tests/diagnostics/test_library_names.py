"""Naming library code a problem was found in: the module by its file, the function by line.

``qualname_at`` reads only the code objects that could span the line; it is checked here
against the obvious reading of every function of the module, line by line."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType

import pytest

from fxls.analysis import library_names
from fxls.analysis.library_names import module_named_by_file, qualname_at

TRICKY = '''\
import functools


def plain(x):
    return x + 1


def outer(x):
    def inner(y):
        return y * 2
    return inner(x) + 1


closure = outer.__code__ and (lambda: None)
made_inside = (lambda: (lambda z: z))()


def wraps_it(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@wraps_it
def decorated(x):
    return x


class Model:
    scale = 2

    def forward(self, x):
        total = 0
        for value in x:
            total += value
        return total

    alias = forward

    @staticmethod
    def static(x):
        return [i for i in x]

    @property
    def size(self):
        return 3

    class Inner:
        def method(self):
            return 1


value_after_everything = 1
'''


def _load(tmp_path: Path, name: str, source: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def _reference(module: ModuleType, file: str) -> Callable[[int], str | None]:
    """The brute force: every function and method with its nested code, all lines."""
    spans: list[tuple[int, int, str]] = []

    def add(code: CodeType) -> None:
        lines = [n for _, _, n in code.co_lines() if n is not None]
        if lines:
            spans.append((code.co_firstlineno, max(lines), code.co_qualname))
        for constant in code.co_consts:
            if isinstance(constant, CodeType):
                add(constant)

    for value in list(vars(module).values()):
        for member in list(vars(value).values()) if isinstance(value, type) else [value]:
            code = library_names._code_of(member)
            if code is not None and code.co_filename == file:
                add(code)

    def at(line: int) -> str | None:
        best: tuple[int, str] | None = None
        for first, last, name in spans:
            if first <= line <= last and (best is None or first >= best[0]):
                best = (first, name)
        return None if best is None or "<locals>" in best[1] else best[1]

    return at


def _modules(tmp_path: Path) -> list[ModuleType]:
    import torch.nn.functional
    import torch.nn.modules.conv

    return [_load(tmp_path, "fxls_tricky_library", TRICKY), torch.nn.functional,
            torch.nn.modules.conv]


def test_the_function_at_each_line_is_the_innermost_that_spans_it(tmp_path: Path) -> None:
    checked = 0
    for module in _modules(tmp_path):
        file = module.__file__
        assert file is not None
        reference = _reference(module, file)
        for line in range(1, len(Path(file).read_text().splitlines()) + 2):
            found = qualname_at(module, file, line)
            assert found == reference(line), (module.__name__, line)
            checked += found is not None
    assert checked > 1000


def test_tricky_definitions_by_name(tmp_path: Path) -> None:
    module = _load(tmp_path, "fxls_tricky_names", TRICKY)
    file = module.__file__
    lines = TRICKY.splitlines()

    def at(text: str) -> str | None:
        return qualname_at(module, file,
                           next(i for i, t in enumerate(lines, 1) if t.strip() == text))

    assert at("return x + 1") == "plain"
    assert at("return y * 2") is None  # a closure: the caller parses the file
    assert at("return fn(*args)") is None
    assert at("return inner(x) + 1") == "outer"
    assert at("return x") == "decorated"
    assert at("total += value") == "Model.forward"
    assert at("return [i for i in x]") is None  # the comprehension is a closure
    assert at("return 3") == "Model.size"
    assert at("scale = 2") is None
    assert at("return 1") is None  # a class inside a class: the caller parses the file
    assert at("value_after_everything = 1") is None


def test_a_module_imported_or_replaced_later_is_found_by_its_file(tmp_path: Path) -> None:
    first = _load(tmp_path, "fxls_named_first", "X = 1\n")
    assert module_named_by_file(first.__file__) == ("fxls_named_first", first)
    later = _load(tmp_path, "fxls_named_later", "Y = 2\n")
    assert module_named_by_file(later.__file__) == ("fxls_named_later", later)
    stand_in = types.ModuleType("fxls_named_later")
    stand_in.__file__ = str(tmp_path / "elsewhere.py")
    sys.modules["fxls_named_later"] = stand_in
    try:
        assert module_named_by_file(later.__file__) is None
        assert module_named_by_file(stand_in.__file__) == ("fxls_named_later", stand_in)
    finally:
        del sys.modules["fxls_named_later"]
    del sys.modules["fxls_named_first"]
    assert module_named_by_file(first.__file__) is None


@pytest.mark.parametrize("missing", ["/nowhere/at/all.py", ""])
def test_a_file_no_module_has_is_none(missing: str) -> None:
    assert module_named_by_file(missing) is None
