"""What torch itself says of each class of a file, in a plain process: the lines of
``torch._dynamo.explain``'s graph breaks and of ``torch.export``'s failure (and
``draft_export``'s), in the file. Run as ``python torch_reference.py FILE``; prints JSON."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import traceback
from pathlib import Path

import torch
import torch._dynamo
from torch.export import Dim


def _pragma(cls_node: ast.ClassDef, source_lines: list[str], kind: str) -> str | None:
    for line in source_lines[cls_node.lineno - 1:cls_node.end_lineno]:
        marker = f"# fxls: {kind} "
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return None


def _lines_in(frames: list[traceback.FrameSummary], path: str) -> list[int]:
    return [frame.lineno for frame in frames if frame.filename == path and frame.lineno]


def _export_line(error: BaseException, path: str) -> int | None:
    frames = traceback.extract_tb(error.__traceback__)
    frames += getattr(error, "real_stack", None) or []
    lines = _lines_in(frames, path)
    return lines[-1] if lines else None


def reference(path: str) -> dict[str, dict]:
    spec = importlib.util.spec_from_file_location("reference_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = Path(path).read_text(encoding="utf-8")
    lines = source.splitlines()
    found = {}
    for node in ast.parse(source).body:
        args = _pragma(node, lines, "args") if isinstance(node, ast.ClassDef) else None
        if args is None:
            continue
        instance = getattr(module, node.name)().eval()
        inputs = eval(args, {"torch": torch})
        breaks, compile_error_line = [], None
        try:
            explained = torch._dynamo.explain(instance)(*inputs)
            breaks = [_lines_in(reason.user_stack, path)[-1]
                      for reason in explained.break_reasons
                      if _lines_in(reason.user_stack, path)]
        except Exception as error:
            compile_error_line = _export_line(error, path)
        dynamic = _pragma(node, lines, "dynamic")
        shapes = None if dynamic is None else {
            name: {int(axis): Dim(dim) for axis, dim in axes.items()}
            for name, axes in ast.literal_eval(dynamic).items()}
        export_line, exported, drafted = None, True, []
        try:
            torch.export.export(instance, inputs, dynamic_shapes=shapes)
        except Exception as error:
            exported, export_line = False, _export_line(error, path)
            try:
                program = torch.export.draft_export(instance, inputs, dynamic_shapes=shapes)
                from torch._logging.structured import INTERN_TABLE
                names = {number: name for name, number in INTERN_TABLE.items()}
                for failure in program._report.failures:
                    if str(failure.failure_type) == "GUARD_ADDED" and shapes is None:
                        continue  # a static shape's guard: how export specializes
                    stack = failure.data.get("user_stack") or []
                    drafted += [frame["line"] for frame in stack
                                if names.get(frame["filename"]) == path]
            except Exception as draft_error:  # its own failure is one more: where it was
                drafted += [line for line in [_export_line(draft_error, path)] if line]
        found[node.name] = {"breaks": breaks, "compile_error_line": compile_error_line,
                            "exported": exported,
                            "export_line": export_line, "drafted": drafted}
    return found


if __name__ == "__main__":
    print(json.dumps(reference(sys.argv[1])))
