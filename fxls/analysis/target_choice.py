"""Which tracers a file's classes must pass (SPEC: Targets), and why: the settings'
``targets`` when given, else what the project's own code does with its models (it calls
``torch.export`` -> export, ``torch.compile`` -> compile, ``symbolic_trace`` or an FX pass ->
symbolic_trace; nothing -> symbolic_trace). A class's ``# fxls: targets ...`` pragma has
the last word for that class.

Inference reads, besides the analysed file, the Python files of its own folder and those at
the top of the project root (where training and export scripts live), at most ``_MAX_FILES``;
a file is parsed only when its text has one of the words a call would (``_WORDS``). It runs
in every job: a whole-repository scan (seconds on a large one) belongs to the client, once
per project, and is left for later.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fxls.codes import Target

#: the calls that say a target, by their last name (``torch.export.export``, ``export`` imported
#: from ``torch.export``...) and the module their dotted name must start with, if any
_CALLS: dict[Target, tuple[tuple[str, str], ...]] = {
    Target.EXPORT: (("export", "torch.export"), ("draft_export", ""), ("export", "torch.onnx"),
                    ("dynamo_export", "")),
    Target.COMPILE: (("compile", "torch"),),
    Target.SYMBOLIC_TRACE: (("symbolic_trace", ""), ("create_feature_extractor", ""),
                            ("prepare_fx", ""), ("prepare_qat_fx", ""), ("GraphModule", ""),
                            ("Transformer", "fx"), ("Interpreter", "fx")),
}
#: a file can only hold such a call if its text has one of these words (most files: no parse)
_WORDS = re.compile(r"\b(?:export|draft_export|compile|symbolic_trace|create_feature_extractor"
                    r"|prepare_fx|prepare_qat_fx|GraphModule|fx)\b")
_MAX_FILES = 200
_MAX_BYTES = 1 << 20
_ORDER = (Target.SYMBOLIC_TRACE, Target.EXPORT, Target.COMPILE)


@dataclass(frozen=True)
class TargetChoice:
    targets: tuple[Target, ...]
    #: how they were chosen, in the user's words ("inferred: torch.export in train.py")
    because: str


def parse_targets(text: str | tuple[str, ...] | list[str]) -> tuple[Target, ...]:
    """``"export, compile"`` or ``("export",)`` -> the targets, in the canonical order;
    unknown names are left out (settings report them; a pragma's are ignored)."""
    names = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    known = {target.value for target in Target}
    chosen = {Target(name) for name in names if name in known}
    return tuple(target for target in _ORDER if target in chosen)


def choose_targets(configured: tuple[str, ...], filename: str, source: str,
                   project_root: str) -> TargetChoice:
    """The file's targets: configured ones, else inferred from the project's code."""
    if configured:
        return TargetChoice(parse_targets(configured), "from the settings")
    found: dict[Target, str] = {}
    for path, text in _project_texts(filename, source, project_root):
        for target, call in _calls_in(text).items():
            found.setdefault(target, f"`{call}` in {_shown(path, project_root)}")
        if len(found) == len(_CALLS):
            break
    if not found:
        return TargetChoice((Target.SYMBOLIC_TRACE,), "the default: nothing in the project "
                            "calls torch.export, torch.compile or torch.fx")
    targets = tuple(target for target in _ORDER if target in found)
    because = "; ".join(f"{target.value}: {found[target]}" for target in targets)
    return TargetChoice(targets, f"inferred ({because})")


def _calls_in(text: str) -> dict[Target, str]:
    """The targets the calls and imports of ``text`` say, each with the first that says it:
    code, not a word in a comment or a string."""
    if _WORDS.search(text) is None:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    imported: dict[str, str] = {}  # local name -> dotted origin
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    said: dict[Target, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name is not None:
                full = imported.get(name.split(".")[0], "")
                full = f"{full}{name[len(name.split('.')[0]):]}" if full else name
                target = _target_of_call(full)
                if target is not None:
                    said.setdefault(target, full)
    return said


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _target_of_call(full: str) -> Target | None:
    parts = full.split(".")
    for target, calls in _CALLS.items():
        for last, prefix in calls:
            if parts[-1] == last and (not prefix or full.startswith(prefix + ".")
                                      or f".{prefix}." in f".{full}"):
                return target
    return None


def _shown(path: str, root: str) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


def _project_texts(filename: str, source: str, root: str) -> Iterator[tuple[str, str]]:
    yield filename, source
    for count, path in enumerate(_python_files(filename, root)):
        if count >= _MAX_FILES:
            return
        if os.path.realpath(path) == os.path.realpath(filename):
            continue
        try:
            if os.path.getsize(path) > _MAX_BYTES or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as handle:
                yield path, handle.read()
        except OSError:
            continue


def _python_files(filename: str, root: str) -> Iterator[str]:
    """The ``.py`` files beside ``filename``, then those at the top of ``root``."""
    seen = set()
    for folder in (os.path.dirname(filename), root):
        if not folder or folder in seen or not os.path.isdir(folder):
            continue
        seen.add(folder)
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".py"):
                yield os.path.join(folder, name)
