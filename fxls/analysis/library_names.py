"""Dotted names of library code a problem was found in (``timm.layers.padding.pad_same``).

Cheap on purpose: a file importing ``transformers`` has thousands of modules loaded, and a
lazy module computes attributes on ``getattr``; reading each module's ``__dict__`` and the
functions' code objects costs no parse of the library's (often long) source.
"""

from __future__ import annotations

import sys
from types import CodeType, FunctionType, ModuleType
from typing import Any

#: unwrapping decorators stops after this many ``__wrapped__`` links
_WRAP_LIMIT = 8


#: ``__file__`` -> module name, as of ``sys.modules`` of this size
_by_file: dict[str, str] = {}
_by_file_size = -1
#: (module name, file) -> (first line, last line, qualified name) of its functions
_spans: dict[tuple[str, str], list[tuple[int, int, str]]] = {}


def module_named_by_file(file: str) -> tuple[str, ModuleType] | None:
    """The loaded module whose ``__file__`` is ``file``."""
    global _by_file_size
    found = _lookup(file)
    if len(sys.modules) != _by_file_size or (file in _by_file and found is None):
        _by_file.clear()
        _by_file_size = len(sys.modules)
        for name, module in list(sys.modules.items()):
            path = _file_of(module)
            if path is not None:
                _by_file.setdefault(path, name)
        found = _lookup(file)
    return found


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
    if key not in _spans:
        _spans[key] = _function_spans(module, file)
    best: tuple[int, str] | None = None
    for first, last, qualname in _spans[key]:
        if first <= line <= last and (best is None or first >= best[0]):
            best = (first, qualname)
    if best is None or "<locals>" in best[1]:
        return None
    return best[1]


def _function_spans(module: ModuleType, file: str) -> list[tuple[int, int, str]]:
    spans = []
    for value in list(vars(module).values()):
        members = list(vars(value).values()) if isinstance(value, type) else [value]
        for member in members:
            code = _code_of(member)
            if code is None or code.co_filename != file:
                continue
            for inner in _nested_codes(code):
                lines = [n for _, _, n in inner.co_lines() if n is not None]
                if lines:
                    spans.append((inner.co_firstlineno, max(lines), inner.co_qualname))
    return spans


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
