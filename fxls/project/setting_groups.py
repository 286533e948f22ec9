"""The groups of project settings: one frozen record per concern, each field a key of
``[tool.fxls]`` under its own name. :class:`fxls.project.settings.Settings` holds one of each
and replaces a group whole when a value changes (its lists and tables are copied on every
change, never edited in place).

>>> JobLimits(timeout=5.0, memory_limit_mb=2048).timeout
5.0
>>> TracerTargets().targets  # inferred from the code
()
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

DEFAULT_TIMEOUT_S = 30.0
#: processes a job may run at once (DataLoader workers, a compiler, a shell command...)
DEFAULT_MAX_PROCESSES = 64
#: the size of a job's private temporary folder (memory-backed where the sandbox mounts it)
DEFAULT_TMP_LIMIT_MB = 1024
TRACE_MODES = ("eval", "train", "both")
#: the tracers a project's code can be checked against (SPEC: targets)
TARGET_NAMES = ("symbolic_trace", "export", "compile")


def default_memory_limit_mb() -> int:
    """Half of this machine's memory (at least 2 GB): room for real models, and for a second
    job next to this one."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 4096
    return max(2048, total // 2)


@dataclass(frozen=True, slots=True)
class DiagnosticFilter:
    """Which codes are reported (prefixes allowed): only ``select`` (empty: all), never
    ``ignore``."""

    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class JobLimits:
    """What one analysis job may take before it is ended (FX102)."""

    timeout: float = DEFAULT_TIMEOUT_S
    #: the memory one analysis job may use, all its processes together (MB; also each
    #: process's address space)
    memory_limit_mb: int = field(default_factory=default_memory_limit_mb)
    #: the processes one analysis job may run at once, itself included
    max_processes: int = DEFAULT_MAX_PROCESSES
    #: the size of an analysis job's private temporary folder (MB)
    tmp_limit_mb: int = DEFAULT_TMP_LIMIT_MB


@dataclass(frozen=True, slots=True)
class TracingOptions:
    """How modules are symbolically traced and checked."""

    #: qualified class names (``pkg.mod.Block``) or bare class names traced as leaves
    leaf_modules: list[str] = field(default_factory=list)
    #: qualified function names (``pkg.mod.helper``) wrapped as call_function leaves
    autowrap_functions: list[str] = field(default_factory=list)
    #: python files with pattern/replacement rewrite rules (paths relative to the project root)
    rule_files: list[str] = field(default_factory=list)
    #: compare the traced graph against eager forward (FX014); costs one eager run
    check_eager: bool = True
    #: the mode modules are traced and run in: ``eval`` (as quantization and deployment
    #: trace) or ``train``
    trace_mode: str = "eval"


@dataclass(frozen=True, slots=True)
class SandboxAccess:
    """What analysed code may reach beyond its sandbox."""

    #: let analysed code open internet connections (off: factories never download); only
    #: the user's own settings can turn it on
    allow_network: bool = False
    #: folders analysed code may write to besides a temporary folder of its own: absolute,
    #: symlinks resolved (the repository's are relative to the project root and stay inside)
    allow_write: list[str] = field(default_factory=list)
    #: environment variables analysed code gets besides PATH, the locale, PYTHONPATH and its
    #: own HOME and TMPDIR (the caller's own variables never reach it)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ProjectLayout:
    """Where the project is and how its models are built."""

    #: the directory holding pyproject.toml (or the file's folder); put on sys.path; set by
    #: fxls itself
    root: str = ""
    #: folders (relative to the project root) that imports start from, e.g. ``["src"]``;
    #: by default the project root and its ``src/``
    roots: list[str] = field(default_factory=list)
    #: callables that build models, ``"pkg.models:build_net"`` or
    #: ``"pkg.models:build_net(depth=2)"``; tried first for the classes they build
    entry_points: list[str] = field(default_factory=list)
    #: models a file of passes with no model of its own runs its passes on,
    #: ``"pkg.models:resnet18()"``; by default a few representative graphs
    pass_models: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TracerTargets:
    """The tracers the project's code must pass (issue 33)."""

    #: a non-empty subset of :data:`TARGET_NAMES`; empty: inferred from the project's code
    targets: tuple[str, ...] = ()
    #: ``torch.export`` with ``strict=True`` (TorchDynamo reads the code)
    export_strict: bool = False
    #: ``torch.compile(fullgraph=True)``: a graph break is an error, not a warning
    fullgraph: bool = False
    #: export's dynamic shapes by ``forward`` argument name, ``{"input_ids": {"0": "batch",
    #: "1": "seq"}}`` (a dimension's name is a ``torch.export.Dim``; a class's
    #: ``# fxls: dynamic`` pragma is used instead for that class)
    dynamic: dict[str, dict[str, str]] = field(default_factory=dict)
