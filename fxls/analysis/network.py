"""What analysed code may do beyond computing: no network and writes only to the job's
temporary folder unless ``[tool.fxls]`` allows more (``allow_network``, ``allow_write``).

The worker enforces the policy (``fxls.worker.sandbox``, given per job by
``Settings.job_policy``); here the analysis turns what was refused into FX103 diagnostics at
the user's line.
"""

from __future__ import annotations

import os
from pathlib import Path

from fxls.codes import CODES
from fxls.report import Diagnostic, Span
from fxls.worker import guard

MESSAGE = guard.NETWORK_MESSAGE
NetworkRefused = guard.NetworkRefused
_LIBRARY_PARTS = ("site-packages", "dist-packages")
_OWN_PACKAGES = tuple(str(Path(__file__).resolve().parents[2] / name) + os.sep
                      for name in ("fxls", "fxcore"))


def refuse_network() -> None:
    """In a job of a worker without the sandbox: Python-level internet connections and name
    lookups raise ``NetworkRefused`` (a sandboxed job has its guard already)."""
    guard.install(writable=None, network=False)


def refusal_diagnostics(path: str, root: str) -> list[Diagnostic]:
    """FX103 for each refused write, metadata change or connection, at the innermost line of
    the user's code that tried (the analysed file first, else another file of the project)."""
    analysed = str(Path(path).resolve())
    found: dict[tuple[object, ...], Diagnostic] = {}
    for refusal in guard.refusals:
        span = _user_span(refusal.frames, analysed, root)
        if span is None:
            continue
        message = _message(refusal.kind, refusal.target, refusal.detail)
        found.setdefault((span.key(), message),
                         Diagnostic("FX103", CODES["FX103"].severity, message, span, ""))
    return list(found.values())


def _message(kind: str, target: str, detail: str = "") -> str:
    if kind == "network":
        return (f"network access ({target}) was refused: analysed code has no network "
                "(allow it with `fxls check --allow-network` or the editor setting "
                "`fxls.allowNetwork`)")
    if kind == "metadata":
        return (f"changing the {detail} of {target!r} was refused: analysed code changes files "
                f"only in a temporary folder ({guard.HOW_TO_ALLOW_WRITE})")
    if kind == "socket":
        return (f"connecting to the Unix socket {target!r} was refused: analysed code cannot "
                "ask services outside its sandbox to act for it")
    return (f"writing {target!r} was refused: analysed code writes only to a temporary folder "
            f"({guard.HOW_TO_ALLOW_WRITE})")


def _user_span(frames: list[tuple[str, int, int, int, int]], analysed: str,
               root: str) -> Span | None:
    fallback = None
    root_prefix = str(Path(root).resolve()) + os.sep if root else None
    for file, line, end_line, col, end_col in frames:
        if file == analysed:
            return Span(file, line, end_line, col, end_col)
        if (fallback is None and root_prefix and file.startswith(root_prefix)
                and not file.startswith(_OWN_PACKAGES)
                and not any(part in file for part in _LIBRARY_PARTS)):
            fallback = Span(file, line, end_line, col, end_col)
    return fallback
