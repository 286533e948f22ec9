"""Project settings: ``[tool.fxls]`` in pyproject.toml, merged with editor/CLI overrides.

Resolution order (later wins): built-in defaults -> the nearest pyproject.toml's
``[tool.fxls]`` above the analysed file -> editor settings / command-line flags.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fxls.worker.policy import JobPolicy

DEFAULT_TIMEOUT_S = 30.0
#: a trace needs at least this long (importing torch alone takes longer); and at most an hour
TIMEOUT_RANGE_S = (1.0, 3600.0)
MEMORY_RANGE_MB = (256, 1024 * 1024)
PROCESSES_RANGE = (1, 4096)
TMP_RANGE_MB = (1, 1024 * 1024)
#: processes a job may run at once (DataLoader workers, a compiler, a shell command...)
DEFAULT_MAX_PROCESSES = 64
#: the size of a job's private temporary folder (memory-backed where the sandbox mounts it)
DEFAULT_TMP_LIMIT_MB = 1024
TRACE_MODES = ("eval", "train", "both")


def check_number(name: str, value: Any, low: float, high: float, *, integer: bool = False
                 ) -> str | None:
    """Why ``value`` is not a usable ``name`` (a finite number in [low, high]), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"`{name}` must be a number, not {value!r}"
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        return f"`{name}` must be a whole number, not {value!r}"
    if not math.isfinite(value) or not low <= value <= high:
        return f"`{name}` must be between {low:g} and {high:g}, not {value!r}"
    return None


def _check_setting(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the setting ``name``, or None if it can."""
    if name == "timeout":
        return check_number(name, value, *TIMEOUT_RANGE_S)
    if name == "memory_limit_mb":
        return check_number(name, value, *MEMORY_RANGE_MB, integer=True)
    if name == "max_processes":
        return check_number(name, value, *PROCESSES_RANGE, integer=True)
    if name == "tmp_limit_mb":
        return check_number(name, value, *TMP_RANGE_MB, integer=True)
    if name == "trace_mode":
        if value not in TRACE_MODES:
            return f"`trace_mode` must be one of {', '.join(TRACE_MODES)}, not {value!r}"
        return None
    default = getattr(Settings(), name)
    if isinstance(default, dict):
        if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                           for k, v in value.items()):
            return None
        return f"`{name}` must be a table of strings"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"`{name}` must be true or false"
    if isinstance(default, list):
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return None
        return f"`{name}` must be a list of strings"
    if isinstance(default, str) and not isinstance(value, str):
        return f"`{name}` must be a string"
    return None


def default_memory_limit_mb() -> int:
    """Half of this machine's memory (at least 2 GB): room for real models, and for a second
    job next to this one."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 4096
    return max(2048, total // 2)


@dataclass(slots=True)
class Settings:
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    timeout: float = DEFAULT_TIMEOUT_S
    #: the memory one analysis job may use, all its processes together (MB; also each
    #: process's address space); over it is FX102
    memory_limit_mb: int = field(default_factory=default_memory_limit_mb)
    #: the processes one analysis job may run at once, itself included; more is FX102
    max_processes: int = DEFAULT_MAX_PROCESSES
    #: the size of an analysis job's private temporary folder (MB)
    tmp_limit_mb: int = DEFAULT_TMP_LIMIT_MB
    #: qualified class names (``pkg.mod.Block``) or bare class names traced as leaves
    leaf_modules: list[str] = field(default_factory=list)
    #: qualified function names (``pkg.mod.helper``) wrapped as call_function leaves
    autowrap_functions: list[str] = field(default_factory=list)
    #: python files with pattern/replacement rewrite rules (paths relative to the project root)
    rule_files: list[str] = field(default_factory=list)
    #: compare the traced graph against eager forward (FX014); costs one eager run
    check_eager: bool = True
    #: let analysed code open internet connections (off: factories never download)
    allow_network: bool = False
    #: folders (relative to the project root) analysed code may write to; by default it
    #: writes only to a temporary folder of its own
    allow_write: list[str] = field(default_factory=list)
    #: environment variables analysed code gets besides PATH, the locale, PYTHONPATH and its
    #: own HOME and TMPDIR (the caller's own variables never reach it)
    env: dict[str, str] = field(default_factory=dict)
    #: the mode modules are traced and run in: ``eval`` (as quantization and deployment
    #: trace) or ``train``
    trace_mode: str = "eval"
    #: folders (relative to the project root) that imports start from, e.g. ``["src"]``;
    #: by default the project root and its ``src/``
    roots: list[str] = field(default_factory=list)
    #: callables that build models, ``"pkg.models:build_net"`` or
    #: ``"pkg.models:build_net(depth=2)"``; tried first for the classes they build
    entry_points: list[str] = field(default_factory=list)
    #: models a file of passes with no model of its own runs its passes on,
    #: ``"pkg.models:resnet18()"``; by default a few representative graphs
    pass_models: list[str] = field(default_factory=list)
    #: the directory holding pyproject.toml (or the file's folder); put on sys.path
    root: str = ""
    #: settings that were given bad values (the default was used instead), one line each
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Settings from ``data``; a bad value keeps the default and adds to ``problems``."""
        known = {f.name for f in fields(cls)} - {"problems"}
        settings = cls()
        settings.problems = list(data.get("problems") or [])
        for key, value in data.items():
            key = key.replace("-", "_")
            if key not in known or value is None:
                continue
            problem = _check_setting(key, value)
            if problem is not None:
                default = getattr(settings, key)
                shown = "[]" if default == [] else repr(default)
                settings.problems.append(f"{problem}; using {shown}")
                continue
            if key in ("memory_limit_mb", "max_processes", "tmp_limit_mb"):
                value = int(value)
            elif key == "timeout":
                value = float(value)
            setattr(settings, key, value)
        return settings

    def job_policy(self) -> JobPolicy:
        """What an analysis job may do and use; ``allow_write`` folders are relative to the
        project root."""
        root = Path(self.root or ".")
        write = tuple(str((root / folder).resolve()) for folder in self.allow_write)
        return JobPolicy(network=self.allow_network, write=write,
                         memory_mb=self.memory_limit_mb, max_processes=self.max_processes,
                         tmp_mb=self.tmp_limit_mb,
                         env=tuple((str(k), str(v)) for k, v in self.env.items()))

    def merged(self, overrides: dict[str, Any]) -> Settings:
        data = self.to_dict()
        data.update({k.replace("-", "_"): v for k, v in overrides.items() if v is not None})
        return Settings.from_dict(data)


def find_project_root(path: Path) -> Path | None:
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def load_settings(path: str | Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for the file or folder ``path``: its project's ``[tool.fxls]`` plus overrides.

    A malformed pyproject.toml is ignored (defaults apply) rather than failing the check.
    """
    target = Path(path).resolve()
    root = find_project_root(target)
    data: dict[str, Any] = {}
    if root is not None:
        try:
            with open(root / "pyproject.toml", "rb") as handle:
                data = tomllib.load(handle).get("tool", {}).get("fxls", {})
        except (OSError, tomllib.TOMLDecodeError):
            data = {}
    settings = Settings.from_dict(data)
    fallback = target if target.is_dir() else target.parent
    settings.root = str(root if root is not None else fallback)
    return settings.merged(overrides or {})
