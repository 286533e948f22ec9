"""Dotted names of library code a problem was found in (``timm.layers.padding.pad_same``),
and what to keep opaque for it (the function, or the nn.Module class whose method it is).

Cheap on purpose: a file importing ``transformers`` has thousands of modules loaded, and a
lazy module computes attributes on ``getattr``; reading each module's ``__dict__`` and the
functions' code objects costs no parse of the library's (often long) source.
"""

from __future__ import annotations

import ast
import functools
import sys
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any

import torch

from fxcore.source import SourceSpan

#: unwrapping decorators stops after this many ``__wrapped__`` links
_WRAP_LIMIT = 8


#: ``__file__`` -> module name
_by_file: dict[str, str] = {}
#: module name -> id of the module object ``_by_file`` has taken in under that name
_taken: dict[str, int] = {}
#: (module name, file) -> the code objects of its module-level functions and of its
#: module-level classes' methods defined in that file, by first line
_codes: dict[tuple[str, str], tuple[list[int], list[CodeType]]] = {}


def library_function(site: SourceSpan, tree_of: Callable[[str], ast.AST | None]) -> str:
    """``timm.layers.padding.pad_same``: the module and the function enclosing ``site``
    (``tree_of`` parses its file when no loaded function names it: a closure's line)."""
    found = module_named_by_file(site.file)
    qualname = qualname_at(found[1], site.file, site.line) if found is not None else None
    if qualname is None:
        tree = tree_of(site.file)
        qualname = _enclosing_function(tree, site.line) if tree is not None else None
    module = found[0] if found is not None else Path(site.file).stem
    return f"{module}.{qualname or site.function}"


def opaque_target(library: str) -> str | None:
    """What to keep opaque for a problem in ``library`` (``pkg.mod.fn`` or ``pkg.mod.Cls.m``):
    the function, or the nn.Module class whose method it is (None: neither resolves)."""
    parts = library.split(".")
    for cut in (len(parts), len(parts) - 1):
        module_name, owner = ".".join(parts[: cut - 1]), parts[cut - 1] if cut > 1 else ""
        value = getattr(sys.modules.get(module_name), owner, None)
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            return f"{module_name}.{owner}"
        if cut == len(parts) and callable(value) and not isinstance(value, type):
            return library
    return None


def _enclosing_function(tree: ast.AST, line: int) -> str | None:
    """The qualified name of the innermost function around ``line`` (``Conv2dSame.forward``)."""
    best: str | None = None

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                child.lineno <= line <= (child.end_lineno or child.lineno)
            ):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    best = name
                visit(child, f"{name}.")

    visit(tree, "")
    return best


def module_named_by_file(file: str) -> tuple[str, ModuleType] | None:
    """The loaded module whose ``__file__`` is ``file``."""
    found = _lookup(file)
    if found is None:
        _take_new_modules()
        found = _lookup(file)
    return found


def _take_new_modules() -> None:
    """Add the modules ``sys.modules`` got since the last call (or put back under a name):
    a job imports one file into thousands of modules the idle process has taken in."""
    for name, module in list(sys.modules.items()):
        if _taken.get(name) == id(module):
            continue
        _taken[name] = id(module)
        path = _file_of(module)
        if path is not None and (path not in _by_file or _lookup(path) is None):
            _by_file[path] = name


def _lookup(file: str) -> tuple[str, ModuleType] | None:
    name = _by_file.get(file)
    module = sys.modules.get(name) if name is not None else None
    if name is None or module is None or _file_of(module) != file:
        return None
    return name, module


def _file_of(module: Any) -> str | None:
    try:
        path = vars(module).get("__file__")
    except TypeError:  # a stand-in without a __dict__ put into sys.modules
        return None
    return path if isinstance(path, str) else None


def qualname_at(module: ModuleType, file: str, line: int) -> str | None:
    """The qualified name of the innermost function of ``module`` defined in ``file``
    whose code spans ``line`` (``BertSelfAttention.forward``); None when no module-level
    function or method of a module-level class does (a closure: the caller parses)."""
    key = (module.__name__, file)
    if key not in _codes:
        _codes[key] = _codes_by_first_line(module, file)
    firsts, codes = _codes[key]
    # the latest to start first: it is the one around ``line`` unless ``line`` is outside
    # every function (or the code is a closure's, inside an earlier function)
    for code in reversed(codes[:bisect_right(firsts, line)]):
        best: tuple[int, str] | None = None
        for inner in _nested_codes(code):
            if inner.co_firstlineno <= line <= _last_line(inner) and (
                    best is None or inner.co_firstlineno >= best[0]):
                best = (inner.co_firstlineno, inner.co_qualname)
        if best is not None:
            return None if "<locals>" in best[1] else best[1]
    return None


def _codes_by_first_line(module: ModuleType, file: str) -> tuple[list[int], list[CodeType]]:
    codes: dict[int, CodeType] = {}
    for value in list(vars(module).values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            code = _code_of(member)
            if code is not None and code.co_filename == file:
                codes[id(code)] = code
    ordered = sorted(codes.values(), key=lambda c: c.co_firstlineno)
    return [c.co_firstlineno for c in ordered], ordered


@functools.cache
def _last_line(code: CodeType) -> int:
    return max((n for _, _, n in code.co_lines() if n is not None), default=-1)


def _code_of(value: Any) -> CodeType | None:
    value = getattr(value, "__func__", value) if isinstance(value, staticmethod | classmethod) \
        else value
    if isinstance(value, property):
        value = value.fget
    for _ in range(_WRAP_LIMIT):
        if isinstance(value, FunctionType):
            wrapped = vars(value).get("__wrapped__")
            if not isinstance(wrapped, FunctionType):
                return value.__code__
            value = wrapped
    return None


def _nested_codes(code: CodeType) -> list[CodeType]:
    found = [code]
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            found.extend(_nested_codes(constant))
    return found
