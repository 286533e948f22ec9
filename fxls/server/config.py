"""Editor settings (``fxls.*``): a typed view with defaults, validated once.

Sources, later wins: defaults -> initializationOptions -> workspace/didChangeConfiguration.
Both the nested form (``{"fxls": {"trace": {"onSave": true}}}``) and the flat dotted form
(``{"trace.onSave": true}``) are accepted, with or without the ``fxls`` section.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from fxls.settings import DEFAULT_TIMEOUT_S

TRACE_MODES = ("", "eval", "train", "both")


@dataclass(slots=True)
class ServerConfig:
    trace_on_save: bool = True
    trace_on_change: bool = False
    #: pause after the last edit before an on-change trace (ms)
    trace_on_change_delay_ms: int = 600
    trace_timeout: float = DEFAULT_TIMEOUT_S
    python: str = field(default_factory=lambda: sys.executable)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    inlay_hints_shapes: bool = True
    #: ``eval`` or ``train``; empty: the project's ``[tool.fxls] trace_mode`` (default eval)
    trace_mode: str = ""

    def updated(self, raw: Any) -> ServerConfig:
        """A copy with the settings in ``raw`` applied; wrong types are ignored, not fatal."""
        flat = _flatten(raw.get("fxls", raw) if isinstance(raw, dict) else {})
        config = ServerConfig(**{name: getattr(self, name) for name in self.__slots__})
        for key, attribute, kind in _KEYS:
            if key in flat and isinstance(flat[key], kind) and flat[key] is not None:
                value = flat[key]
                if kind is list:
                    value = [str(v) for v in value]
                if kind == (int, float):
                    value = float(value)
                setattr(config, attribute, value)
        if not config.python:
            config.python = sys.executable
        if config.trace_mode not in TRACE_MODES:
            config.trace_mode = ""
        return config


_KEYS: list[tuple[str, str, Any]] = [
    ("trace.onSave", "trace_on_save", bool),
    ("trace.onChange", "trace_on_change", bool),
    ("trace.onChangeDelay", "trace_on_change_delay_ms", int),
    ("trace.timeout", "trace_timeout", (int, float)),
    ("python", "python", str),
    ("diagnostics.select", "select", list),
    ("diagnostics.ignore", "ignore", list),
    ("inlayHints.shapes", "inlay_hints_shapes", bool),
    ("trace.mode", "trace_mode", str),
]


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
