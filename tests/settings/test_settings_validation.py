"""Every setting is validated: a bad value gives one clear line and the default is used."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fxls.project.setting_groups import DEFAULT_TIMEOUT_S
from fxls.project.settings import PROJECT, USER, Settings, load_settings
from fxls.server.config import ServerConfig


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1, 1e-9, 10**9, "soon", True, None])
def test_a_bad_timeout_is_said_and_the_default_used(bad: object) -> None:
    settings = Settings.from_dict({"timeout": bad})
    assert settings.limits.timeout == DEFAULT_TIMEOUT_S
    assert len(settings.problems) == (0 if bad is None else 1)
    config = ServerConfig(trace_timeout=5.0).updated({"fxls": {"trace": {"timeout": bad}}})
    if bad is None:
        assert (config.trace_timeout, config.problems) == (5.0, [])
    else:
        assert config.trace_timeout == DEFAULT_TIMEOUT_S
        (problem,) = config.problems
        assert problem.startswith("fxls.trace.timeout = ") and "using the default 30.0" in problem


def test_every_project_setting_is_checked() -> None:
    settings = Settings.from_dict({
        "memory_limit_mb": -5, "trace_mode": "fast", "leaf_modules": "Block",
        "check_eager": "yes", "root": 3, "select": ["FX001"], "timeout": 12,
    })
    tracing = settings.tracing
    assert (tracing.trace_mode, tracing.leaf_modules, tracing.check_eager) == (
        "eval", [], True)
    assert (settings.diagnostics.select, settings.limits.timeout) == (["FX001"], 12.0)
    assert [p.key for p in settings.problems] == [
        "memory_limit_mb", "trace_mode", "leaf_modules", "check_eager", "root"]


def test_every_editor_setting_is_checked() -> None:
    config = ServerConfig().updated({"fxls": {
        "trace": {"onSave": "no", "onChangeDelay": -1, "mode": "fast"},
        "diagnostics": {"select": "FX001"}, "inlayHints.shapes": False, "python": 3}})
    assert config.inlay_hints_shapes is False
    assert sorted(p.split(" = ")[0] for p in config.problems) == [
        "fxls.diagnostics.select", "fxls.python", "fxls.trace.mode", "fxls.trace.onChangeDelay",
        "fxls.trace.onSave"]
    assert config == ServerConfig(inlay_hints_shapes=False, problems=config.problems)


PYPROJECT = """[project]
name = "victim"

[tool.fxls]
memory_limit_mb = 1e30
timeout = nan
max_processes = "many"
leaf_modules = [1, 2]
timout = 5
allow_write = [
  "cache",
  "../../outside",
  "/abs/outside",
  "escape",
]
allow_network = true
roots = ["src", "../elsewhere"]
rule_files = ["/etc/passwd"]
env = { TORCH_HOME = "/models", LD_PRELOAD = "/tmp/evil.so", PYTHONPATH = "/tmp/evil" }
"""


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "cache").mkdir(parents=True)
    (project / "escape").symlink_to(tmp_path)  # inside by name, outside once resolved
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    return project


def test_each_bad_value_is_named_with_its_line_and_what_was_used(hostile: Path) -> None:
    settings = load_settings(hostile / "m.py")
    said = {(p.key, p.line): str(p) for p in settings.problems}
    default = Settings()
    assert said[("memory_limit_mb", 5)] == (
        f"`memory_limit_mb` = 1e+30: must be between 256 and 1048576; using "
        f"{default.limits.memory_limit_mb}")
    assert said[("timeout", 6)] == "`timeout` = nan: must be between 1 and 3600; using 30.0"
    assert said[("max_processes", 7)] == '`max_processes` = "many": must be a number; using 64'
    assert said[("leaf_modules", 8)] == (
        "`leaf_modules` = [1, 2]: must be a list of strings; using []")
    assert said[("timout", 9)] == "`timout` = 5: not a setting of fxls; ignored"
    limits = settings.limits
    assert (limits.memory_limit_mb, limits.timeout, limits.max_processes) == (
        default.limits.memory_limit_mb, DEFAULT_TIMEOUT_S, 64)
    assert all(p.path == str(hostile / "pyproject.toml") and p.source == PROJECT
               for p in settings.problems)


def test_a_repository_cannot_widen_its_own_sandbox(hostile: Path) -> None:
    settings = load_settings(hostile / "m.py")
    refused = {(p.key, p.value, p.line) for p in settings.problems if "refused" in p.message}
    assert refused == {
        ("allow_write", '"../../outside"', 12), ("allow_write", '"/abs/outside"', 13),
        ("allow_write", '"escape"', 14), ("allow_network", "true", 16),
        ("roots", '"../elsewhere"', 17), ("rule_files", '"/etc/passwd"', 18),
        ("env.LD_PRELOAD", '"/tmp/evil.so"', 19), ("env.PYTHONPATH", '"/tmp/evil"', 19),
    }
    outside = next(p for p in settings.problems if p.value == '"escape"')
    assert f"{hostile.parent} is outside the project root {hostile}" in outside.message
    assert "the job runs without it" in outside.message and "--allow-write" in outside.message
    # the rest applies
    assert settings.access.allow_write == [str(hostile / "cache")]
    assert (settings.access.allow_network, settings.project.roots, settings.tracing.rule_files) == (
        False, ["src"], [])
    assert settings.access.env == {"TORCH_HOME": "/models"}
    policy = settings.job_policy()
    assert (policy.write, policy.network) == ((str(hostile / "cache"),), False)
    assert policy.env == (("TORCH_HOME", "/models"),)


def test_the_user_may_allow_more_and_the_job_gets_it_unjudged(hostile: Path,
                                                              tmp_path: Path) -> None:
    settings = load_settings(hostile / "m.py", {"allow_write": [str(tmp_path), "/"],
                                                "allow_network": True})
    assert settings.access.allow_write == [str(hostile / "cache"), str(tmp_path), "/"]
    assert settings.access.allow_network is True
    assert settings.sources["allow_write"] == settings.sources["allow_network"] == USER
    assert settings.sources["roots"] == PROJECT
    job = Settings.from_dict(settings.to_dict())  # what the job process reads
    assert (job.access.allow_write, job.access.allow_network, job.problems) == (
        settings.access.allow_write, True, [])
    assert job.job_policy() == settings.job_policy()


def test_a_broken_pyproject_is_said(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 5\nselect = = 3\n\n",
                                             encoding="utf-8")
    (problem,) = load_settings(tmp_path / "m.py").problems
    assert problem.key == "tool.fxls" and "cannot be read" in problem.message
    assert "using the defaults" in problem.message and problem.line == 3


def test_unknown_editor_settings_are_said() -> None:
    config = ServerConfig().updated({"fxls": {"trace": {"timout": 3}, "interpreter": "/py",
                                              "allowWrite": ["/data"], "allowNetwork": True}})
    assert config.problems == ["fxls.trace.timout = 3: not a setting of fxls; ignored"]
    overrides = config.overrides()
    assert (overrides["allow_write"], overrides["allow_network"]) == (["/data"], True)


def test_a_bad_value_of_the_user_is_said_too(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 12\n", encoding="utf-8")
    settings = load_settings(tmp_path / "m.py", {"timeout": 0.0})
    (problem,) = settings.problems
    assert (problem.source, problem.path, settings.limits.timeout) == (USER, "", 12.0)
    assert problem.located() == (
        "your setting `timeout` = 0.0: must be between 1 and 3600; using 12.0")
