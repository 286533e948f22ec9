"""The diagnostic codes: one table, shared by the analysis, the CLI and the language server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    severity: Severity
    title: str
    unnecessary: bool = False


CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code("FX001", Severity.ERROR, "traced value used in control flow"),
        Code("FX002", Severity.ERROR, "traced value iterated"),
        Code("FX003", Severity.ERROR, "traced value converted to a Python value"),
        Code("FX004", Severity.ERROR, "exception while tracing"),
        Code("FX005", Severity.ERROR, "value used before it is defined"),
        Code("FX006", Severity.ERROR, "graph lint failure"),
        Code("FX007", Severity.ERROR, "graph changed after its last recompile()"),
        Code("FX010", Severity.WARNING, "unused computation", unnecessary=True),
        Code("FX011", Severity.WARNING, "in-place op on an input, parameter or buffer"),
        Code("FX012", Severity.WARNING, "tensor baked into the graph as a constant"),
        Code("FX013", Severity.WARNING, "call runs only at trace time"),
        Code("FX014", Severity.ERROR, "traced graph differs from eager forward"),
        Code("FX015", Severity.INFORMATION, "the graph could not run on its example inputs"),
        Code("FX016", Severity.INFORMATION, "train and eval mode trace to different graphs"),
        Code("FX017", Severity.INFORMATION, "a pass changes the model's outputs"),
        Code("FX020", Severity.INFORMATION, "rewrite available"),
        Code("FX201", Severity.ERROR, "data-dependent branch or guard in export"),
        Code("FX202", Severity.ERROR, "Python that strict export cannot trace"),
        Code("FX203", Severity.ERROR, "operator without a fake kernel"),
        Code("FX205", Severity.ERROR, "dynamic dimension specialized by the code"),
        Code("FX209", Severity.ERROR, "exception while exporting"),
        Code("FX301", Severity.WARNING, "graph break"),
        Code("FX309", Severity.ERROR, "exception while compiling"),
        Code("FX100", Severity.ERROR, "file cannot be executed"),
        Code("FX101", Severity.INFORMATION, "module cannot be constructed"),
        Code("FX102", Severity.ERROR, "worker timed out or crashed"),
        Code("FX103", Severity.INFORMATION, "a write or network access was refused"),
    )
}

class Target(StrEnum):
    """A tracer the project's code must pass (``[tool.fxls] targets``)."""

    SYMBOLIC_TRACE = "symbolic_trace"
    EXPORT = "export"
    COMPILE = "compile"


_FAMILY_TARGETS = {"FX0": Target.SYMBOLIC_TRACE, "FX2": Target.EXPORT, "FX3": Target.COMPILE}


def target_of(code: str) -> Target | None:
    """The tracer whose problem ``code`` is (None: fxls's own, e.g. FX1xx, about every target)."""
    return _FAMILY_TARGETS.get(code[:3])


#: the repository fxls is published from (``[project.urls]`` in pyproject.toml, and
#: ``repository`` in the VS Code extension's package.json)
REPOSITORY_URL = "https://github.com/fxls/fxls"
#: the diagnostics reference as published in the repository: what editors link to
DOCS_URL = f"{REPOSITORY_URL}/blob/main/docs/diagnostics.md"


def doc_anchor(code: str) -> str:
    """The anchor of ``code``'s section (``## FX001: traced value used in control flow``)
    as GitHub makes it from the heading: lower case, punctuation dropped, spaces -> ``-``."""
    known = CODES.get(code)
    heading = f"{code}: {known.title}" if known is not None else code
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def doc_url(code: str) -> str:
    """The published docs section of ``code`` (``FXLS_DOCS_URL`` replaces the page, e.g. for
    a fork or a mirror): a URL an editor opens in the browser, never a local file."""
    base = os.environ.get("FXLS_DOCS_URL") or DOCS_URL
    return f"{base}#{doc_anchor(code)}"


def parse_code_list(text: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """``"FX001, fx01"`` or ``["FX001", "FX01"]`` -> ``("FX001", "FX01")``: codes or code
    prefixes (``FX0``), upper-cased, in order, each once. The one parser of code lists (CLI
    options, ``[tool.fxls]``, editor settings)."""
    if not text:
        return ()
    items = text.split(",") if isinstance(text, str) else [str(item) for item in text]
    return tuple(dict.fromkeys(item.strip().upper() for item in items if item.strip()))


def unknown_codes(codes: tuple[str, ...]) -> list[str]:
    """The entries of ``codes`` that are neither a code nor the prefix of one."""
    return [item for item in codes if not any(known.startswith(item) for known in CODES)]


def code_selected(code: str, select: tuple[str, ...], ignore: tuple[str, ...]) -> bool:
    """Ruff-style selection: prefixes match, ignore wins over select, empty select = all."""
    if any(code.startswith(prefix) for prefix in ignore):
        return False
    return not select or any(code.startswith(prefix) for prefix in select)
