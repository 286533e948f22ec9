"""Every setting is validated: a bad value gives one clear line and the default is used."""

from __future__ import annotations

import math

import pytest

from fxls.server.config import ServerConfig
from fxls.settings import DEFAULT_TIMEOUT_S, Settings


@pytest.mark.parametrize("bad", [math.inf, math.nan, -1, 1e-9, 10**9, "soon", True, None])
def test_a_bad_timeout_is_said_and_the_default_used(bad: object) -> None:
    settings = Settings.from_dict({"timeout": bad})
    assert settings.timeout == DEFAULT_TIMEOUT_S
    assert len(settings.problems) == (0 if bad is None else 1)
    config = ServerConfig(trace_timeout=5.0).updated({"fxls": {"trace": {"timeout": bad}}})
    if bad is None:
        assert (config.trace_timeout, config.problems) == (5.0, [])
    else:
        assert config.trace_timeout == DEFAULT_TIMEOUT_S
        (problem,) = config.problems
        assert problem.startswith("fxls.trace.timeout: ") and "using the default 30.0" in problem


def test_every_project_setting_is_checked() -> None:
    settings = Settings.from_dict({
        "memory_limit_mb": -5, "trace_mode": "fast", "leaf_modules": "Block",
        "check_eager": "yes", "root": 3, "select": ["FX001"], "timeout": 12,
    })
    assert (settings.trace_mode, settings.leaf_modules, settings.check_eager) == (
        "eval", [], True)
    assert (settings.select, settings.timeout) == (["FX001"], 12.0)
    assert [p.split("`")[1] for p in settings.problems] == [
        "memory_limit_mb", "trace_mode", "leaf_modules", "check_eager", "root"]


def test_every_editor_setting_is_checked() -> None:
    config = ServerConfig().updated({"fxls": {
        "trace": {"onSave": "no", "onChangeDelay": -1, "mode": "fast"},
        "diagnostics": {"select": "FX001"}, "inlayHints.shapes": False, "python": 3}})
    assert config.inlay_hints_shapes is False
    assert sorted(p.split(":")[0] for p in config.problems) == [
        "fxls.diagnostics.select", "fxls.python", "fxls.trace.mode", "fxls.trace.onChangeDelay",
        "fxls.trace.onSave"]
    assert config == ServerConfig(inlay_hints_shapes=False, problems=config.problems)
