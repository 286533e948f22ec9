"""Project settings: ``[tool.fxls]`` in pyproject.toml, merged with editor/CLI overrides.

Resolution order (later wins): built-in defaults -> the nearest pyproject.toml's
``[tool.fxls]`` above the analysed file -> editor settings / command-line flags
(``allow_write`` folders of both count).

The repository's pyproject.toml is written by whoever wrote the code being analysed, so it
cannot widen the sandbox that code runs in: its path settings must resolve inside the
project root (symlinks resolved), it cannot allow the network, and its ``env`` cannot set
variables that change what the interpreter, the loader or a shell runs. The user's own
settings (editor, command line) can. ``load_settings`` validates every value once; a bad or
refused one becomes a :class:`SettingProblem` (key, value, what was done instead, the line of
pyproject.toml) and the rest applies. The job gets the result (``to_dict``/``from_dict``).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from fxls.project.files import read_regular_file
from fxls.project.setting_lines import KeyLines, key_lines
from fxls.worker.policy import JobPolicy

#: a pyproject.toml is read up to this size (a bigger one is a settings problem)
PYPROJECT_LIMIT_BYTES = 1 << 20
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

#: where a value came from: the analysed repository's pyproject.toml, or the user
PROJECT, USER = "project", "user"
#: settings naming files or folders, which a repository may set only inside its root
PATH_SETTINGS = ("allow_write", "roots", "rule_files")
#: variables a repository's ``env`` may not set: they change what the interpreter, the
#: dynamic loader or a shell runs, or are the job's own
_REFUSED_ENV = re.compile(
    r"(LD_|DYLD_|PYTHON|MALLOC_|GLIBC_).*|PATH|HOME|TMPDIR|GCONV_PATH|LOCPATH|NLSPATH"
    r"|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|IFS|PERL5LIB|PERL5OPT|RUBYOPT|NODE_OPTIONS")
_INTERNAL = ("root", "problems", "sources")
_HOW_TO_ALLOW_NETWORK = ("allow it yourself with `fxls check --allow-network` or the editor "
                         "setting `fxls.allowNetwork`")
_HOW_TO_ALLOW_WRITE = ("allow a folder outside yourself with `fxls check --allow-write DIR` "
                       "or the editor setting `fxls.allowWrite`")


@dataclass(frozen=True, slots=True)
class SettingProblem:
    """A setting that was bad or refused, and what was used instead."""

    key: str
    #: the value as written (TOML-like)
    value: str
    #: what is wrong and what was done: ``must be between 1 and 3600; using 30.0``
    message: str
    source: str = PROJECT
    #: the pyproject.toml it is written in ("" for the user's own settings)
    path: str = ""
    #: its 1-based line there (0: unknown)
    line: int = 0

    def __str__(self) -> str:
        return f"`{self.key}` = {self.value}: {self.message}"

    def located(self, shown_path: str | None = None) -> str:
        """One line for a terminal: ``pyproject.toml:7: [tool.fxls] `key` = value: ...``."""
        if not self.path:
            return f"your setting {self}"
        return f"{shown_path or self.path}:{self.line}: [tool.fxls] {self}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "key": self.key, "value": self.value,
                "message": self.message, "source": self.source}


def shown_value(value: Any) -> str:
    """``value`` as TOML would write it (``1e+30``, ``nan``, ``"soon"``, ``[1, 2]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(shown_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {shown_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def check_number(value: Any, low: float, high: float, *, integer: bool = False) -> str | None:
    """Why ``value`` is not a finite number in [low, high] (whole with ``integer``), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if not math.isfinite(value) or not low <= value <= high:
        return f"must be between {_number(low)} and {_number(high)}"
    if integer and not (isinstance(value, int) or float(value).is_integer()):
        return "must be a whole number"
    return None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _check_setting(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the setting ``name``, or None if it can."""
    if name == "timeout":
        return check_number(value, *TIMEOUT_RANGE_S)
    if name == "memory_limit_mb":
        return check_number(value, *MEMORY_RANGE_MB, integer=True)
    if name == "max_processes":
        return check_number(value, *PROCESSES_RANGE, integer=True)
    if name == "tmp_limit_mb":
        return check_number(value, *TMP_RANGE_MB, integer=True)
    if name == "trace_mode":
        return None if value in TRACE_MODES else f"must be one of {', '.join(TRACE_MODES)}"
    default = getattr(Settings(), name)
    if isinstance(default, dict):
        if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str)
                                           for k, v in value.items()):
            return None
        return "must be a table of strings"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, list):
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return None
        return "must be a list of strings"
    if isinstance(default, str) and not isinstance(value, str):
        return "must be a string"
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
    #: let analysed code open internet connections (off: factories never download); only
    #: the user's own settings can turn it on
    allow_network: bool = False
    #: folders analysed code may write to besides a temporary folder of its own: absolute,
    #: symlinks resolved (the repository's are relative to the project root and stay inside)
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
    #: settings that were bad or refused (their default, or the rest, was used instead)
    problems: list[SettingProblem] = field(default_factory=list)
    #: where each setting that is not its default came from: ``PROJECT`` or ``USER``
    sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The validated values, for the job (``from_dict``)."""
        return {f.name: _copy(getattr(self, f.name)) for f in fields(self)
                if f.name not in ("problems", "sources")}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Settings from ``to_dict`` (the job's copy): already validated by ``load_settings``
        and not judged again (a folder the user allowed is outside the root); an ill-typed
        value still keeps its default and adds to ``problems``."""
        settings = cls()
        known = {f.name for f in fields(cls)} - {"problems", "sources"}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key in known and value is not None:
                settings._set(key, value, USER, None)
        return settings

    def apply(self, data: dict[str, Any], source: str, pyproject: str = "",
              lines: KeyLines | None = None) -> None:
        """Validate and apply ``data`` from ``source``; each bad or refused value is a
        problem (with its line of ``pyproject``) and the rest applies."""
        known = {f.name for f in fields(self)} - set(_INTERNAL)
        for raw_key, value in data.items():
            key = raw_key.replace("-", "_")
            place = _Place(source, pyproject, lines, raw_key)
            if key not in known:
                why = "set by fxls itself" if key in _INTERNAL else "not a setting of fxls"
                self.problems.append(place.problem(value, f"{why}; ignored"))
            elif value is not None:
                self._set(key, value, source, place)

    def _set(self, key: str, value: Any, source: str, place: _Place | None) -> None:
        problem = _check_setting(key, value)
        if problem is not None:
            default = getattr(self, key)
            self._problem(place, key, value, f"{problem}; using {shown_value(default)}")
            return
        if key in ("memory_limit_mb", "max_processes", "tmp_limit_mb"):
            value = int(value)
        elif key == "timeout":
            value = float(value)
        if place is not None:
            value = self._judged(key, value, place)
            if value is None:
                return
        if key == "allow_write":
            value = list(dict.fromkeys([*self.allow_write, *value]))  # both sources' folders
        if place is not None:
            self.sources[key] = source
        setattr(self, key, _copy(value))

    def _judged(self, key: str, value: Any, place: _Place) -> Any:
        """``value`` less what its source may not set (each refusal a problem); None: none of
        it applies."""
        root = Path(self.root or ".").resolve()
        if key == "allow_write":
            folders = []
            for folder in value:
                resolved = (root / os.path.expanduser(folder)).resolve()
                if place.source == PROJECT and not _inside(resolved, root):
                    self._problem(place, key, folder, f"refused: {resolved} is outside the "
                                  f"project root {root}; the job runs without it "
                                  f"({_HOW_TO_ALLOW_WRITE})", entry=folder)
                    continue
                folders.append(str(resolved))
            return folders
        if place.source != PROJECT:
            return value
        if key in PATH_SETTINGS:
            kept = []
            for entry in value:
                resolved = (root / entry).resolve()
                if _inside(resolved, root):
                    kept.append(entry)
                else:
                    self._problem(place, key, entry, f"refused: {resolved} is outside the "
                                  f"project root {root}; the job runs without it", entry=entry)
            return kept
        if key == "allow_network" and value:
            self._problem(place, key, value, "refused: a repository cannot allow network "
                          f"access to the code it holds; the job runs without network "
                          f"({_HOW_TO_ALLOW_NETWORK})")
            return None
        if key == "env":
            kept_env = {}
            for name, text in value.items():
                if _REFUSED_ENV.fullmatch(name):
                    self._problem(place, f"env.{name}", text, "refused: a repository cannot "
                                  "set a variable that changes what the interpreter, the "
                                  "loader or a shell runs; the job runs without it")
                else:
                    kept_env[name] = text
            return kept_env
        return value

    def _problem(self, place: _Place | None, key: str, value: Any, message: str,
                 entry: str | None = None) -> None:
        if place is None:
            self.problems.append(SettingProblem(key, shown_value(value), message, USER))
        else:
            self.problems.append(place.problem(value, message, key=key, entry=entry))

    def job_policy(self) -> JobPolicy:
        """What an analysis job may do and use."""
        return JobPolicy(network=self.allow_network, write=tuple(self.allow_write),
                         memory_mb=self.memory_limit_mb, max_processes=self.max_processes,
                         tmp_mb=self.tmp_limit_mb,
                         env=tuple((str(k), str(v)) for k, v in self.env.items()))

    def merged(self, overrides: dict[str, Any]) -> Settings:
        """A copy with the user's ``overrides`` applied (validated, problems added)."""
        merged = Settings.from_dict(self.to_dict())
        merged.problems, merged.sources = list(self.problems), dict(self.sources)
        merged.apply({k: v for k, v in overrides.items() if v is not None}, USER)
        return merged


@dataclass(slots=True)
class _Place:
    """Where a value was written: its source and, for a pyproject.toml, its line."""

    source: str
    pyproject: str
    lines: KeyLines | None
    key: str

    def problem(self, value: Any, message: str, *, key: str | None = None,
                entry: str | None = None) -> SettingProblem:
        line = self.lines.line_of(self.key, entry) if self.lines is not None else 0
        return SettingProblem(key or self.key, shown_value(value), message, self.source,
                              self.pyproject, line)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(
        value, dict) else value


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def find_project_root(path: Path) -> Path | None:
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return None


def load_settings(path: str | Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings for the file or folder ``path``: its project's ``[tool.fxls]`` plus the
    user's ``overrides``, validated. A pyproject.toml that cannot be read or parsed is a
    problem, and the defaults apply."""
    target = Path(path).resolve()
    root = find_project_root(target)
    settings = Settings()
    fallback = target if target.is_dir() else target.parent
    settings.root = str(root if root is not None else fallback)
    if root is not None:
        pyproject = str(root / "pyproject.toml")
        table, lines, problem = _read_table(pyproject)
        if problem is not None:
            settings.problems.append(problem)
        settings.apply(table, PROJECT, pyproject, lines)
    settings.apply({k: v for k, v in (overrides or {}).items() if v is not None}, USER)
    return settings


def _read_table(pyproject: str) -> tuple[dict[str, Any], KeyLines | None, SettingProblem | None]:
    """``[tool.fxls]`` of ``pyproject`` and its lines, or why it cannot be had."""
    text = ""
    try:
        text = read_regular_file(pyproject, PYPROJECT_LIMIT_BYTES).decode("utf-8")
        document = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        found = re.search(r"line (\d+)", str(error))
        line = int(found.group(1)) if found else max(len(text.splitlines()), 1)
        return {}, None, SettingProblem(
            "tool.fxls", "(unread)", f"pyproject.toml cannot be read: {error}; using the "
            "defaults", PROJECT, pyproject, line)
    lines = key_lines(text)
    tool = document.get("tool", {})
    table = tool.get("fxls", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        return {}, lines, SettingProblem("tool.fxls", shown_value(table), "must be a table; "
                                         "using the defaults", PROJECT, pyproject,
                                         lines.table or 1)
    return table, lines, None
