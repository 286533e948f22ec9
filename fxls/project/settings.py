"""Project settings: ``[tool.fxls]`` in pyproject.toml, merged with editor/CLI overrides.

Resolution order (later wins): built-in defaults -> the nearest pyproject.toml's
``[tool.fxls]`` above the analysed file -> editor settings / command-line flags
(``allow_write`` folders of both count). The values are grouped by concern
(``setting_groups``: ``settings.limits.timeout``, ``settings.tracers.targets``...), each key
of ``[tool.fxls]`` keeping its own name in its group.

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
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fxls.project.files import read_regular_file
from fxls.project.setting_groups import (
    TARGET_NAMES,
    TRACE_MODES,
    DiagnosticFilter,
    JobLimits,
    ProjectLayout,
    SandboxAccess,
    TracerTargets,
    TracingOptions,
)
from fxls.project.setting_lines import KeyLines, key_lines
from fxls.worker.policy import JobPolicy

#: a pyproject.toml is read up to this size (a bigger one is a settings problem)
PYPROJECT_LIMIT_BYTES = 1 << 20
#: a trace needs at least this long (importing torch alone takes longer); and at most an hour
TIMEOUT_RANGE_S = (1.0, 3600.0)
MEMORY_RANGE_MB = (256, 1024 * 1024)
PROCESSES_RANGE = (1, 4096)
TMP_RANGE_MB = (1, 1024 * 1024)

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
#: the groups of settings (``setting_groups``), by their attribute on :class:`Settings`
GROUPS: dict[str, type] = {
    "diagnostics": DiagnosticFilter, "limits": JobLimits, "tracing": TracingOptions,
    "access": SandboxAccess, "project": ProjectLayout, "tracers": TracerTargets,
}
#: the group each setting is in, by its key
_GROUP_OF = {member.name: group for group, kind in GROUPS.items() for member in fields(kind)}
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


def check_targets(value: Any) -> str | None:
    """Why ``value`` is not a non-empty list of target names, or None."""
    if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
        return f"must be a non-empty list of {', '.join(TARGET_NAMES)}"
    unknown = _unknown_target(value)
    if unknown is not None:
        return (f"{shown_value(unknown)} is not a target: the targets are "
                f"{', '.join(TARGET_NAMES)}")
    return None


def check_dynamic(value: Any) -> str | None:
    """Why ``value`` is not ``{argument = {"<dimension>" = "<name>"}}``, or None."""
    shape = 'must be a table of tables like {input_ids = {"0" = "batch", "1" = "seq"}}'
    if not isinstance(value, dict):
        return shape
    for argument, axes in value.items():
        if not (isinstance(argument, str) and isinstance(axes, dict)):
            return shape
        for axis, dim in axes.items():
            if not (isinstance(axis, str) and axis.isdigit()):
                return f"{shown_value(axis)} of {argument} is not a dimension number"
            if not (isinstance(dim, str) and dim.isidentifier()):
                return f"{shown_value(dim)} of {argument} is not a name for a dimension"
    return None


def _unknown_target(value: Any) -> str | None:
    """The first name in ``value`` that is not a target (where its problem is written)."""
    names = value if isinstance(value, list) else []
    return next((n for n in names if isinstance(n, str) and n not in TARGET_NAMES), None)


def _default(name: str) -> Any:
    return getattr(GROUPS[_GROUP_OF[name]](), name)


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
    if name == "targets":
        return check_targets(value)
    if name == "dynamic":
        return check_dynamic(value)
    default = _default(name)
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


@dataclass(slots=True)
class Settings:
    """Every setting of one analysed file, by group, and what loading them said."""

    diagnostics: DiagnosticFilter = field(default_factory=DiagnosticFilter)
    limits: JobLimits = field(default_factory=JobLimits)
    tracing: TracingOptions = field(default_factory=TracingOptions)
    access: SandboxAccess = field(default_factory=SandboxAccess)
    project: ProjectLayout = field(default_factory=ProjectLayout)
    tracers: TracerTargets = field(default_factory=TracerTargets)
    #: settings that were bad or refused (their default, or the rest, was used instead)
    problems: list[SettingProblem] = field(default_factory=list)
    #: where each setting that is not its default came from, by key: ``PROJECT`` or ``USER``
    sources: dict[str, str] = field(default_factory=dict)

    def value(self, key: str) -> Any:
        """The setting ``key`` (a key of ``[tool.fxls]``, e.g. ``timeout``)."""
        return getattr(getattr(self, _GROUP_OF[key]), key)

    def _replace(self, key: str, value: Any) -> None:
        group = _GROUP_OF[key]
        setattr(self, group, replace(getattr(self, group), **{key: value}))

    def to_dict(self) -> dict[str, Any]:
        """The validated values, for the job (``from_dict``). Targets left to inference are
        left out: an empty ``targets`` is not a value one can set."""
        values = {key: _as_json(self.value(key)) for key in _GROUP_OF}
        if not values["targets"]:
            del values["targets"]
        return values

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Settings:
        """Settings from ``to_dict`` (the job's copy): already validated by ``load_settings``
        and not judged again (a folder the user allowed is outside the root); an ill-typed
        value still keeps its default and adds to ``problems``."""
        settings = cls()
        for key, value in data.items():
            key = key.replace("-", "_")
            if key in _GROUP_OF and value is not None:
                settings._set(key, value, USER, None)
        return settings

    def apply(self, data: dict[str, Any], source: str, pyproject: str = "",
              lines: KeyLines | None = None) -> None:
        """Validate and apply ``data`` from ``source``; each bad or refused value is a
        problem (with its line of ``pyproject``) and the rest applies."""
        known = set(_GROUP_OF) - set(_INTERNAL)
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
            entry = _unknown_target(value) if key == "targets" else None
            self._problem(place, key, value, f"{problem}; {self._fallback(key)}", entry=entry)
            return
        if key in ("memory_limit_mb", "max_processes", "tmp_limit_mb"):
            value = int(value)
        elif key == "timeout":
            value = float(value)
        elif key == "targets":
            value = tuple(dict.fromkeys(value))
        if place is not None:
            value = self._judged(key, value, place)
            if value is None:
                return
        if key == "allow_write":  # both sources' folders
            value = list(dict.fromkeys([*self.access.allow_write, *value]))
        if place is not None:
            self.sources[key] = source
        self._replace(key, _copy(value))

    def _fallback(self, key: str) -> str:
        """What is used instead of a bad value of ``key``: its current one."""
        current = self.value(key)
        if key == "targets" and not current:
            return "inferring them from the code"
        return f"using {shown_value(current)}"

    def _judged(self, key: str, value: Any, place: _Place) -> Any:
        """``value`` less what its source may not set (each refusal a problem); None: none of
        it applies."""
        root = Path(self.project.root or ".").resolve()
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
        access, limits = self.access, self.limits
        return JobPolicy(network=access.allow_network, write=tuple(access.allow_write),
                         memory_mb=limits.memory_limit_mb, max_processes=limits.max_processes,
                         tmp_mb=limits.tmp_limit_mb,
                         env=tuple((str(k), str(v)) for k, v in access.env.items()))

    def merged(self, overrides: dict[str, Any]) -> Settings:
        """A copy with the user's ``overrides`` applied (validated, problems added)."""
        # the groups are frozen and every change copies their lists: shared safely
        merged = replace(self, problems=list(self.problems), sources=dict(self.sources))
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
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    return list(value) if isinstance(value, list) else value


def _as_json(value: Any) -> Any:
    """``value`` as JSON holds it, never shared with the settings (tuples become lists)."""
    return list(value) if isinstance(value, tuple) else _copy(value)


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
    fallback = target if target.is_dir() else target.parent
    settings = Settings(project=ProjectLayout(root=str(root if root is not None else fallback)))
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
