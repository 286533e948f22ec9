"""Execute a user's file as a module (never as ``__main__``) and find its nn.Module classes."""

from __future__ import annotations

import ast
import inspect
import sys
import traceback
import types
from dataclasses import dataclass
from pathlib import Path

from fxcore.source import SourceSpan


@dataclass
class LoadFailure:
    message: str
    span: SourceSpan


def module_name_for(path: Path) -> str:
    stem = path.stem if path.stem.isidentifier() else "user_module"
    return stem if stem not in sys.modules else f"_fxls_{stem}"


def execute_file(path: Path, source: str, root: str) -> types.ModuleType | LoadFailure:
    """Run ``source`` (the text of ``path``) as a fresh module; failures become FX100 data."""
    for folder in (str(path.parent), root):
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)
    name = module_name_for(path)
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules[name] = module
    filename = str(path)
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        line = error.lineno or 1
        col = max((error.offset or 1) - 1, 0)
        end_line = error.end_lineno or line
        end_col = max((error.end_offset or (col + 2)) - 1, col + 1)
        text_line = source.splitlines()[line - 1] if 0 < line <= len(source.splitlines()) else ""
        byte_col = len(text_line[:col].encode("utf-8"))
        byte_end = len(text_line[:end_col].encode("utf-8")) if end_line == line else end_col
        return LoadFailure(
            f"{type(error).__name__}: {error.msg}",
            SourceSpan(filename, line, end_line, byte_col, max(byte_end, byte_col + 1)),
        )
    try:
        exec(code, module.__dict__)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        return LoadFailure(_describe(error), _failure_span(error, filename, source))
    return module


def _describe(error: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return f"the file raised while being imported: {text}"


def _failure_span(error: BaseException, filename: str, source: str) -> SourceSpan:
    tb = error.__traceback__
    best: SourceSpan | None = None
    while tb is not None:
        frame_code = tb.tb_frame.f_code
        if frame_code.co_filename == filename:
            positions = list(frame_code.co_positions())
            index = tb.tb_lasti // 2
            if 0 <= index < len(positions) and positions[index][0] is not None:
                line, end_line, col, end_col = positions[index]
                best = SourceSpan(filename, line, end_line or line, col or 0, end_col or 0)
            else:
                best = SourceSpan(filename, tb.tb_lineno, tb.tb_lineno, 0, 0)
        tb = tb.tb_next
    if best is not None:
        return best
    first = source.splitlines()[0] if source else ""
    return SourceSpan(filename, 1, 1, 0, len(first.encode("utf-8")))


def class_definitions(tree: ast.AST | None) -> dict[str, ast.ClassDef]:
    """Class definitions of a parsed file by name (the first one of each name)."""
    found: dict[str, ast.ClassDef] = {}
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


def module_classes(module: types.ModuleType, definitions: dict[str, ast.ClassDef]) -> list[type]:
    """nn.Module subclasses defined in ``module``, in source order."""
    import torch

    found: list[tuple[int, type]] = []
    for value in list(vars(module).values()):
        if (
            inspect.isclass(value)
            and issubclass(value, torch.nn.Module)
            and value.__module__ == module.__name__
        ):
            definition = definitions.get(value.__name__)
            found.append((definition.lineno if definition is not None else 10**9, value))
    found.sort(key=lambda item: item[0])
    return [cls for _, cls in found]


def class_span(
    cls: type, filename: str, source: str, definitions: dict[str, ast.ClassDef]
) -> SourceSpan:
    """The class name in ``class Name(...)``."""
    node = definitions.get(cls.__name__)
    if node is None:
        return SourceSpan(filename, 1, 1, 0, 0)
    text = source.splitlines()[node.lineno - 1]
    start = text.find(node.name, text.find("class"))
    byte_start = len(text[:start].encode("utf-8"))
    return SourceSpan(filename, node.lineno, node.lineno, byte_start,
                      byte_start + len(node.name.encode("utf-8")))
