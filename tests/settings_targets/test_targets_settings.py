"""The tracers a project's code must pass (issue 33): ``[tool.fxls] targets``,
``export_strict`` and ``fullgraph``, validated like every setting (each problem at its line),
overridden by ``fxls check --target`` and the editor setting ``fxls.targets``, and carried to
the analysis job as ``settings.tracers``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fxls.analysis_runs.request import AnalysisRequest
from fxls.cli import _overrides, build_parser, main
from fxls.project.setting_groups import TracerTargets
from fxls.project.settings import PROJECT, USER, Settings, load_settings
from fxls.server.config import ServerConfig

BAD = """[project]
name = "p"

[tool.fxls]
targets = [
  "export",
  "trace",
]
export_strict = "yes"
fullgraph = 1
"""


def _project(folder: Path, table: str) -> Path:
    (folder / "pyproject.toml").write_text(f"[tool.fxls]\n{table}", encoding="utf-8")
    model = folder / "m.py"
    model.write_text("x = 1\n", encoding="utf-8")
    return model


def test_absent_targets_are_inferred_and_both_options_off(tmp_path: Path) -> None:
    settings = load_settings(_project(tmp_path, "timeout = 5\n"))
    assert settings.tracers == TracerTargets(targets=(), export_strict=False, fullgraph=False)
    assert settings.problems == []


def test_the_project_names_its_targets_and_options(tmp_path: Path) -> None:
    settings = load_settings(_project(tmp_path, 'targets = ["export", "compile", "export"]\n'
                                                "export_strict = true\nfullgraph = true\n"))
    assert settings.tracers == TracerTargets(("export", "compile"), True, True)
    assert settings.problems == []
    assert settings.sources["targets"] == settings.sources["fullgraph"] == PROJECT


def test_each_bad_value_is_a_problem_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(BAD, encoding="utf-8")
    settings = load_settings(tmp_path / "m.py")
    said = {(p.key, p.line): str(p) for p in settings.problems}
    assert said == {
        ("targets", 7): '`targets` = ["export", "trace"]: "trace" is not a target: the targets '
                        "are symbolic_trace, export, compile; inferring them from the code",
        ("export_strict", 9): '`export_strict` = "yes": must be true or false; using false',
        ("fullgraph", 10): "`fullgraph` = 1: must be true or false; using false",
    }
    assert all(p.path == str(tmp_path / "pyproject.toml") for p in settings.problems)
    assert settings.tracers == TracerTargets()


@pytest.mark.parametrize("written", ["[]", '"export"', "[1]"])
def test_targets_must_be_a_non_empty_list_of_names(tmp_path: Path, written: str) -> None:
    settings = load_settings(_project(tmp_path, f"timeout = 5\ntargets = {written}\n"))
    (problem,) = settings.problems
    assert (problem.key, problem.line) == ("targets", 3)
    assert problem.message == ("must be a non-empty list of symbolic_trace, export, compile; "
                               "inferring them from the code")
    assert settings.tracers.targets == ()


def test_the_command_line_target_overrides_the_project(tmp_path: Path) -> None:
    model = _project(tmp_path, 'targets = ["export"]\nfullgraph = true\n')
    args = build_parser().parse_args(["check", "--target", " compile, symbolic_trace",
                                      str(model)])
    settings = load_settings(model, _overrides(args))
    assert settings.tracers == TracerTargets(("compile", "symbolic_trace"), False, True)
    assert settings.sources["targets"] == USER
    assert load_settings(model, _overrides(build_parser().parse_args(
        ["check", str(model)]))).tracers.targets == ("export",)


@pytest.mark.parametrize(("flag", "said"), [
    ("export,trace", '"trace" is not a target: the targets are symbolic_trace, export, compile'),
    (",", "expected one or more of symbolic_trace, export, compile, comma-separated"),
])
def test_a_bad_target_flag_is_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        flag: str, said: str) -> None:
    model = _project(tmp_path, "")
    assert main(["check", "--target", flag, str(model)]) == 2
    assert f"fxls check: error: argument --target: {said}\n" in capsys.readouterr().err


def test_a_bad_project_target_is_in_the_json_settings_problems(tmp_path: Path) -> None:
    model = _project(tmp_path, 'targets = ["exprt"]\n')
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--no-progress", "--format",
                           "json", str(model)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (problem,) = json.loads(done.stdout)["settings_problems"]
    assert (problem["key"], problem["line"], problem["value"]) == ("targets", 2, '["exprt"]')
    assert problem["message"].startswith('"exprt" is not a target: the targets are ')
    assert "[tool.fxls] `targets` = [\"exprt\"]" in done.stderr


def test_the_editor_setting_is_read_and_overrides_the_project(tmp_path: Path) -> None:
    config = ServerConfig().updated({"fxls": {"targets": ["compile", "export"]}})
    assert (config.targets, config.problems) == (["compile", "export"], [])
    model = _project(tmp_path, 'targets = ["symbolic_trace"]\n')
    assert load_settings(model, config.overrides()).tracers.targets == ("compile", "export")
    unset = ServerConfig().updated({"fxls": {"targets": []}})
    assert unset.overrides()["targets"] is None
    assert load_settings(model, unset.overrides()).tracers.targets == ("symbolic_trace",)


def test_a_bad_editor_setting_is_said_and_the_default_used() -> None:
    config = ServerConfig(targets=["export"]).updated({"targets": ["export", "jit"]})
    assert config.targets == []
    assert config.problems == [
        'fxls.targets = ["export", "jit"]: "jit" is not a target: the targets are '
        "symbolic_trace, export, compile; using the default []"]


def test_the_group_arrives_in_the_job(tmp_path: Path) -> None:
    model = _project(tmp_path, 'targets = ["export"]\nexport_strict = true\n')
    settings = load_settings(model, {"targets": ["export", "compile"]})
    request = AnalysisRequest(str(model), "x = 1\n", settings)
    # what the job process decodes (fxls.analysis.job) from the params the client encodes
    sent = json.loads(json.dumps(request.params()))
    job = Settings.from_dict(sent["settings"])
    assert job.tracers == TracerTargets(("export", "compile"), True, False)
    assert job.problems == []
    inferred = Settings.from_dict(json.loads(json.dumps(Settings().to_dict())))
    assert (inferred.tracers.targets, inferred.problems) == ((), [])
