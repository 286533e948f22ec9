"""Editor settings (``fxls.*``): a typed view with defaults, validated once.

Sources, later wins: defaults -> initializationOptions -> workspace/didChangeConfiguration.
Both the nested form (``{"fxls": {"trace": {"onSave": true}}}``) and the flat dotted form
(``{"trace.onSave": true}``) are accepted, with or without the ``fxls`` section. A bad value
keeps the default and an unknown key (in an ``fxls`` section) is ignored, each with a line in
``problems``: nothing is ignored silently.

``allowWrite`` and ``allowNetwork`` widen what analysed code may do: they are the user's
(editor settings), which a repository's ``[tool.fxls]`` cannot do (``fxls.project.settings``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from fxls.project.setting_groups import DEFAULT_TIMEOUT_S
from fxls.project.settings import TIMEOUT_RANGE_S, check_number, check_targets, shown_value

TRACE_MODES = ("", "eval", "train", "both")
#: the pause before an on-change trace (ms)
CHANGE_DELAY_RANGE_MS = (0, 60_000)


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
    #: the worker keeps the libraries jobs import loaded for later jobs (``learner``)
    learn_libraries: bool = True
    #: folders analysed code may write to besides its temporary folder (any folder;
    #: relative ones from the project root), added to the project's own
    allow_write: list[str] = field(default_factory=list)
    #: let analysed code open network connections
    allow_network: bool = False
    #: the tracers the code must pass (``symbolic_trace``, ``export``, ``compile``); empty:
    #: the project's ``[tool.fxls] targets``, else inferred from the code
    targets: list[str] = field(default_factory=list)
    #: the settings of the last update that had bad values (their defaults were used)
    problems: list[str] = field(default_factory=list)

    def updated(self, raw: Any) -> ServerConfig:
        """A copy with the settings in ``raw`` applied. A bad value is not fatal: the
        setting takes its default, and ``problems`` says which and why, one line each."""
        sectioned = isinstance(raw, dict) and isinstance(raw.get("fxls"), dict)
        flat = _flatten(raw.get("fxls", raw) if isinstance(raw, dict) else {})
        config = ServerConfig(**{name: getattr(self, name) for name in self.__slots__})
        config.problems = []
        if sectioned:
            known = {key for key, _, _ in _KEYS} | _CLIENT_KEYS
            config.problems += [f"fxls.{key} = {shown_value(value)}: not a setting of fxls; "
                                "ignored" for key, value in flat.items() if key not in known]
        for key, attribute, kind in _KEYS:
            if key not in flat or flat[key] is None:
                continue
            value = flat[key]
            problem = _problem(key, value, kind)
            if problem is not None:
                default = getattr(ServerConfig(), attribute)
                setattr(config, attribute, default)
                config.problems.append(f"fxls.{key} = {shown_value(value)}: {problem}; "
                                       f"using the default {shown_value(default)}")
                continue
            if kind is list:
                value = [str(v) for v in value]
            elif kind == (int, float):
                value = float(value)
            elif kind is int:
                value = int(value)
            setattr(config, attribute, value)
        if not config.python:
            config.python = sys.executable
        return config

    def overrides(self) -> dict[str, Any]:
        """The project settings these editor settings override (None: the project's)."""
        return {
            "timeout": self.trace_timeout,
            "select": self.select or None,
            "ignore": self.ignore or None,
            "trace_mode": self.trace_mode or None,
            "allow_write": self.allow_write or None,
            "allow_network": self.allow_network or None,
            "targets": self.targets or None,
        }


def _problem(key: str, value: Any, kind: Any) -> str | None:
    if key == "trace.timeout":
        return check_number(value, *TIMEOUT_RANGE_S)
    if key == "trace.onChangeDelay":
        return check_number(value, *CHANGE_DELAY_RANGE_MS, integer=True)
    if key == "targets" and value != []:
        return check_targets(value)
    if key == "trace.mode" and value not in TRACE_MODES:
        return f"must be one of {', '.join(shown_value(m) for m in TRACE_MODES)}"
    if kind is bool and not isinstance(value, bool):
        return "must be true or false"
    if kind is str and not isinstance(value, str):
        return "must be a string"
    if kind is list and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return "must be a list of strings"
    return None


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
    ("worker.learnLibraries", "learn_libraries", bool),
    ("allowWrite", "allow_write", list),
    ("allowNetwork", "allow_network", bool),
    ("targets", "targets", list),
]
#: settings of the editor extensions themselves, which the server does not use
_CLIENT_KEYS = frozenset({"interpreter", "trace.server"})


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
