"""Bad or refused ``[tool.fxls]`` settings as diagnostics on the project's pyproject.toml,
at the key's line (the value's own range when it is written there), so that the user sees
them where they are written; replaced on every load of the settings, cleared once fixed."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fxls.project.files import read_regular_file
from fxls.project.settings import PYPROJECT_LIMIT_BYTES, SettingProblem

#: the source name of a project's settings diagnostics (``DiagnosticsByUri``)
SOURCE_PREFIX = "fxls-settings:"


def pyproject_uri(root: str) -> str:
    return (Path(root) / "pyproject.toml").as_uri()


def settings_diagnostics(problems: list[SettingProblem], root: str) -> list[types.Diagnostic]:
    """The diagnostics of ``problems`` written in ``root``'s pyproject.toml."""
    pyproject = Path(root) / "pyproject.toml"
    mine = [p for p in problems if p.path and Path(p.path) == pyproject]
    if not mine:
        return []
    try:
        lines = read_regular_file(pyproject, PYPROJECT_LIMIT_BYTES).decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    return [_diagnostic(problem, lines) for problem in mine]


def _diagnostic(problem: SettingProblem, lines: list[str]) -> types.Diagnostic:
    line = max(problem.line, 1) - 1
    text = lines[line] if line < len(lines) else ""
    start = text.find(problem.value) if problem.value else -1
    if start >= 0:
        end = start + len(problem.value)
    else:
        start, end = len(text) - len(text.lstrip()), len(text)
    return types.Diagnostic(
        range=types.Range(types.Position(line, _utf16(text, start)),
                          types.Position(line, _utf16(text, end))),
        message=f"[tool.fxls] {problem}",
        severity=types.DiagnosticSeverity.Warning,
        code=problem.key,
        source="fxls",
    )


def _utf16(text: str, index: int) -> int:
    """The UTF-16 column (LSP's default encoding) of code point ``index`` of ``text``."""
    return len(text[:index].encode("utf-16-le")) // 2
