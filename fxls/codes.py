"""The diagnostic codes: one table, shared by the analysis, the CLI and the language server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


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
        Code("FX100", Severity.ERROR, "file cannot be executed"),
        Code("FX101", Severity.INFORMATION, "module cannot be constructed"),
        Code("FX102", Severity.ERROR, "worker timed out or crashed"),
        Code("FX103", Severity.INFORMATION, "a write or network access was refused"),
    )
}

DOCS_URL = "https://github.com/fxls/fxls/blob/main/docs/diagnostics.md"
#: the docs next to this checkout (editable installs), which an editor can open offline
LOCAL_DOCS = Path(__file__).resolve().parent.parent / "docs" / "diagnostics.md"


def doc_url(code: str, *, prefer_local: bool = False) -> str:
    """The docs section of ``code``; with ``prefer_local``, the file in this checkout if any."""
    base = os.environ.get("FXLS_DOCS_URL")
    if base is None:
        base = LOCAL_DOCS.as_uri() if prefer_local and LOCAL_DOCS.is_file() else DOCS_URL
    return f"{base}#{code.lower()}"


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
