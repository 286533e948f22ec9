"""Dynamo's caches per source file and per function: which ones a run filled
(``recording``), and filling them again in another process from those names (``warm``).

dynamo tokenizes each source file whose frames it meets (``funcname_cache``) and cleans the
bytecode of each function it traces (``_cached_cleaned_instructions``, an LRU cache by code
object). A job names what it filled by file and (file, first line, name); a waiting job
process fills the same only for what it has loaded itself: files of modules it has imported
(the preloaded libraries, torch) and their functions' code objects. The job's own file, and
anything else it wrote, is never among them.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: names kept per job at most
MAX_FILES, MAX_FUNCTIONS = 200, 5_000


@dataclass
class CodeNames:
    """What a dynamo run read: source files, and functions as (file, first line, name,
    whether cleaned ``safe``)."""

    files: list[str] = field(default_factory=list)
    functions: list[tuple[str, int, str, bool]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"files": self.files[:MAX_FILES],
                "functions": [list(f) for f in self.functions[:MAX_FUNCTIONS]]}


@contextlib.contextmanager
def recording(names: CodeNames) -> Iterator[None]:
    """Note in ``names`` the files and functions dynamo's caches get while this runs."""
    try:
        from torch._dynamo import bytecode_transformation, funcname_cache
        cached = bytecode_transformation._cached_cleaned_instructions
    except (ImportError, AttributeError):  # another torch: nothing recorded
        yield
        return
    files_before = set(funcname_cache.cache)

    def noting(code: types.CodeType, safe: bool = False) -> Any:
        names.functions.append((code.co_filename, code.co_firstlineno, code.co_name, safe))
        return cached(code, safe)

    bytecode_transformation._cached_cleaned_instructions = noting  # type: ignore[assignment]
    try:
        yield
    finally:
        bytecode_transformation._cached_cleaned_instructions = cached
        names.files.extend(f for f in funcname_cache.cache if f not in files_before)
        names.functions[:] = list(dict.fromkeys(names.functions))


def warm(data: Any) -> int:
    """Fill dynamo's caches for the files and functions ``data`` names that belong to
    modules this process has imported; how many functions were warmed."""
    if not isinstance(data, dict):
        return 0
    from torch._dynamo import bytecode_transformation, funcname_cache
    modules = _modules_by_file()
    files = data.get("files")
    for path in files[:MAX_FILES] if isinstance(files, list) else []:
        if isinstance(path, str) and path in modules:
            funcname_cache.get_funcname(path, 0)
    wanted: dict[str, set[tuple[int, str, bool]]] = {}
    functions = data.get("functions")
    for item in functions[:MAX_FUNCTIONS] if isinstance(functions, list) else []:
        if (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                and isinstance(item[1], int) and isinstance(item[2], str)
                and isinstance(item[3], bool) and item[0] in modules):
            wanted.setdefault(item[0], set()).add((item[1], item[2], item[3]))
    warmed = 0
    for path, keys in wanted.items():
        for module in modules[path]:
            for code in _codes_of(module):
                for safe in (False, True):
                    if (code.co_firstlineno, code.co_name, safe) in keys:
                        bytecode_transformation._cached_cleaned_instructions(code, safe)
                        warmed += 1
    return warmed


def _modules_by_file() -> dict[str, list[types.ModuleType]]:
    found: dict[str, list[types.ModuleType]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(module, types.ModuleType) and isinstance(path, str):
            found.setdefault(path, []).append(module)
    return found


def _codes_of(module: types.ModuleType) -> list[types.CodeType]:
    """The code objects of ``module``'s functions, its classes' methods and properties, and
    the functions nested in them."""
    found: dict[int, types.CodeType] = {}

    def add(code: types.CodeType) -> None:
        if id(code) not in found:
            found[id(code)] = code
            for constant in code.co_consts:
                if isinstance(constant, types.CodeType):
                    add(constant)

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            for accessor in (value.fget, value.fset, value.fdel):
                if accessor is not None:
                    visit(accessor, depth)
            return
        if isinstance(value, types.FunctionType):
            add(value.__code__)
            wrapped = value.__dict__.get("__wrapped__")  # functools.wraps: the function inside
            if isinstance(wrapped, types.FunctionType) and depth < 3:
                visit(wrapped, depth + 1)
        elif isinstance(value, type) and depth < 3 and value.__module__ == module.__name__:
            for member in list(vars(value).values()):
                visit(member, depth + 1)

    for value in list(vars(module).values()):
        visit(value, 0)
    return list(found.values())
