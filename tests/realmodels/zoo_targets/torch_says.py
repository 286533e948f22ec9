"""What torch itself says of each class of a file, in a plain process (no fxls imported):
``torch._dynamo.explain``'s graph breaks, ``torch.export.export``'s failure and
``draft_export``'s report (or its own failure). Each problem with its kind and the line of
the file in its stack, if any (none: the stack is all library code). Run as
``python torch_says.py FILE``; prints JSON on its last line."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import traceback
from pathlib import Path
from typing import Any

import torch
import torch._dynamo


def _args_pragma(node: ast.ClassDef, lines: list[str]) -> str | None:
    for line in lines[node.lineno - 1:node.end_lineno]:
        if "# fxls: args " in line:
            return line.split("# fxls: args ", 1)[1].strip()
    return None


def _user_line(frames: list[Any], path: str) -> int | None:
    lines = [frame.lineno for frame in frames if frame.filename == path and frame.lineno]
    return lines[-1] if lines else None


def _error_line(error: BaseException, path: str) -> int | None:
    frames = traceback.extract_tb(error.__traceback__) + (getattr(error, "real_stack", None)
                                                          or [])
    return _user_line(frames, path)


def _what(error: BaseException) -> str:
    """Which failure it is: a guard's condition, an operator's name, else its text."""
    cond, func = getattr(error, "cond", None), getattr(error, "func", None)
    return str(cond if cond is not None else func if func is not None
               else (str(error).strip().splitlines() or [""])[0].split(". ")[0])


def _breaks(instance: torch.nn.Module, inputs: tuple[Any, ...], path: str) -> dict[str, Any]:
    try:
        explained = torch._dynamo.explain(instance)(*inputs)
    except Exception as error:
        return {"breaks": [], "error": type(error).__name__,
                "error_line": _error_line(error, path)}
    sites: dict[tuple[str, int, str], dict[str, Any]] = {}
    for reason in explained.break_reasons:
        stack = reason.user_stack or []
        gb_type = reason.reason.strip().splitlines()[0]
        site = (stack[-1].filename, stack[-1].lineno, gb_type) if stack else ("", 0, gb_type)
        line = _user_line(stack, path)
        if site not in sites or sites[site]["line"] is None:
            sites[site] = {"gb_type": gb_type, "line": line,
                           "in": f"{Path(site[0]).name}:{site[1]}"}
    # "step_unsupported" is dynamo compiling up to a statement it then runs in Python: the
    # record of how it went past the break at that statement, not another break
    broken = {(site[0], site[1]) for site in sites if site[2] != "step_unsupported"}
    breaks = [found for site, found in sites.items()
              if site[2] != "step_unsupported" or (site[0], site[1]) not in broken]
    return {"breaks": breaks, "error": None, "error_line": None}


def _drafted(instance: torch.nn.Module, inputs: tuple[Any, ...],
             path: str) -> dict[str, Any]:
    from torch._logging.structured import INTERN_TABLE
    try:
        program = torch.export.draft_export(instance, inputs)
    except Exception as error:
        return {"drafted": [], "draft_error": type(error).__name__,
                "draft_error_line": _error_line(error, path), "draft_error_what": _what(error)}
    names = {number: name for name, number in INTERN_TABLE.items()}
    drafted = []
    for failure in program._report.failures:
        if str(failure.failure_type) == "GUARD_ADDED":
            continue  # a static shape's guard: how export specializes
        stack = failure.data.get("user_stack") or []
        lines = [frame["line"] for frame in stack if names.get(frame["filename"]) == path]
        drafted.append({"kind": str(failure.failure_type), "line": lines[-1] if lines else None,
                        "what": str(failure.data.get("expr", failure.data.get("op", "")))})
    return {"drafted": drafted, "draft_error": None, "draft_error_line": None}


def _export(instance: torch.nn.Module, inputs: tuple[Any, ...], path: str) -> dict[str, Any]:
    try:
        torch.export.export(instance, inputs)
    except Exception as error:
        return {"exported": False, "error": type(error).__name__, "what": _what(error),
                "error_line": _error_line(error, path), **_drafted(instance, inputs, path)}
    return {"exported": True, "error": None, "error_line": None, "drafted": []}


def torch_says(path: str) -> dict[str, dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("zoo_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = Path(path).read_text(encoding="utf-8")
    said = {}
    for node in ast.parse(source).body:
        args = (_args_pragma(node, source.splitlines()) if isinstance(node, ast.ClassDef)
                else None)
        if args is None:
            continue
        torch.manual_seed(0)
        instance = getattr(module, node.name)().eval()
        inputs = eval(args, {"torch": torch})
        said[node.name] = {"compile": _breaks(instance, inputs, path),
                           "export": _export(instance, inputs, path)}
        torch._dynamo.reset()
    return said


if __name__ == "__main__":
    print(json.dumps(torch_says(sys.argv[1])))
