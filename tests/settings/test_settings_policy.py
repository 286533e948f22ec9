"""``fxls check`` on a repository whose pyproject.toml tries to widen its own sandbox, or
holds bad values: the policy comes from the user (``--allow-write``, ``--allow-network``),
and every refused or bad setting is said on stderr, in JSON and in SARIF at its line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
GATE = """

class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""
#: the line of `if x.sum() > 0:` in a model that is HEADER + writes + GATE
FX001_TEXT = "if x.sum() > 0:"


def model(writes: list[Path]) -> str:
    """A model that writes a file into each folder of ``writes`` at import."""
    lines = ["import torch", "from torch import nn", ""]
    for folder in writes:
        lines += ["try:", f"    open({str(folder / 'written.txt')!r}, 'w').write('escaped')",
                  "except OSError:", "    pass"]
    return "\n".join(lines) + GATE


def check(project: Path, *flags: str, fmt: str = "json") -> tuple[Any, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--no-progress", "--format",
                           fmt, *flags, "m.py"], capture_output=True, text=True, timeout=180,
                          cwd=project, env=env)
    assert done.returncode == 1, done  # Gate's FX001: the file's own diagnostics are there
    return json.loads(done.stdout), done.stderr


def codes_at(document: dict[str, Any], source: str) -> list[tuple[str, int]]:
    """(code, 1-based line) of the file's diagnostics; FX001 must be at its line."""
    (entry,) = document["files"]
    found = [(d["code"], d["range"]["start"]["line"] + 1) for d in entry["diagnostics"]]
    line = source.splitlines().index("        " + FX001_TEXT) + 1
    assert ("FX001", line) in found, found
    return found


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "work" / "project"
    places = {"project": project, "absolute": tmp_path / "abs", "dotdot": tmp_path / "dotdot",
              "linked": tmp_path / "linked", "user": tmp_path / "user"}
    for folder in places.values():
        folder.mkdir(parents=True)
    (project / "escape").symlink_to(places["linked"])  # inside by name, outside once resolved
    return places


def test_a_repository_cannot_allow_writes_outside_its_root(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "pyproject.toml").write_text(
        '[project]\nname = "victim"\n\n[tool.fxls]\ntimeout = 60\nallow_write = [\n'
        f'  "{layout["absolute"]}",\n  "../../dotdot",\n  "escape",\n  "cache",\n]\n',
        encoding="utf-8")
    (project / "cache").mkdir()
    targets = [layout["absolute"], layout["dotdot"], project / "escape", project / "cache"]
    source = model(targets)
    (project / "m.py").write_text(source, encoding="utf-8")
    document, stderr = check(project)
    written = [folder.name for folder in targets if (folder / "written.txt").exists()]
    assert written == ["cache"], written  # the folder inside the project is still allowed
    refused = {p["line"]: p for p in document["settings_problems"]}
    assert sorted(refused) == [7, 8, 9], document["settings_problems"]
    for line, value in ((7, f'"{layout["absolute"]}"'), (8, '"../../dotdot"'),
                        (9, '"escape"')):
        problem = refused[line]
        assert (problem["path"], problem["key"], problem["value"]) == (
            "pyproject.toml", "allow_write", value)
        assert "outside the project root" in problem["message"]
        assert "the job runs without it" in problem["message"]
        assert f"fxls: pyproject.toml:{line}: [tool.fxls] `allow_write` = {value}: refused: " \
            in stderr, stderr
    assert f"{layout['linked']} is outside" in refused[9]["message"]
    found = codes_at(document, source)
    assert sum(code == "FX103" for code, _ in found) == 3, found  # each refused write


def test_the_user_may_allow_a_folder_outside(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\n", encoding="utf-8")
    source = model([layout["user"]])
    (project / "m.py").write_text(source, encoding="utf-8")
    document, stderr = check(project, "--allow-write", str(layout["user"]))
    assert (layout["user"] / "written.txt").read_text() == "escaped"
    assert "settings_problems" not in document and "fxls:" not in stderr, stderr
    assert [code for code, _ in codes_at(document, source)] == ["FX001"]


@pytest.mark.parametrize("where", ["flag", "pyproject"])
def test_allowing_the_whole_file_system_keeps_the_files_diagnostics(
        layout: dict[str, Path], where: str) -> None:
    project = layout["project"]
    allowed = '\nallow_write = ["/"]\n' if where == "pyproject" else "\n"
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60" + allowed,
                                            encoding="utf-8")
    source = model([])
    (project / "m.py").write_text(source, encoding="utf-8")
    flags = ("--allow-write", "/") if where == "flag" else ()
    document, stderr = check(project, *flags)
    assert [code for code, _ in codes_at(document, source)] == ["FX001"]  # no FX102 crash
    if where == "pyproject":
        (problem,) = document["settings_problems"]
        assert (problem["line"], problem["value"]) == (3, '"/"')
        assert "outside the project root" in problem["message"]
        assert "fxls: pyproject.toml:3: [tool.fxls] `allow_write`" in stderr
    else:
        assert "settings_problems" not in document


def test_a_repository_cannot_allow_the_network(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\nallow_network = true\n",
                                            encoding="utf-8")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        source = ("import socket\nimport torch\nfrom torch import nn\n\ntry:\n"
                  f"    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
                  "except OSError:\n    pass\n" + GATE)
        (project / "m.py").write_text(source, encoding="utf-8")
        document, stderr = check(project)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    (problem,) = document["settings_problems"]
    assert (problem["key"], problem["value"], problem["line"]) == ("allow_network", "true", 3)
    assert "--allow-network" in problem["message"] and "fxls.allowNetwork" in problem["message"]
    assert "fxls: pyproject.toml:3: [tool.fxls] `allow_network` = true: refused" in stderr
    found = codes_at(document, source)
    assert ("FX103", 6) in found, found


BAD = """[project]
name = "typos"

[tool.fxls]
timeout = 60
memory_limit_mb = 1e30
tmp_limit_mb = nan
max_processes = "many"
leaf_modules = [1, 2]
check-eagre = false
"""
BAD_LINES = {"memory_limit_mb": 6, "tmp_limit_mb": 7, "max_processes": 8, "leaf_modules": 9,
             "check-eagre": 10}


def test_bad_values_are_said_on_stderr_and_in_json(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "pyproject.toml").write_text(BAD, encoding="utf-8")
    source = model([])
    (project / "m.py").write_text(source, encoding="utf-8")
    document, stderr = check(project)
    said = {p["key"]: p for p in document["settings_problems"]}
    assert {key: p["line"] for key, p in said.items()} == BAD_LINES
    assert said["memory_limit_mb"]["value"] == "1e+30"
    assert said["memory_limit_mb"]["message"].startswith("must be between 256 and 1048576; "
                                                         "using ")
    assert said["tmp_limit_mb"]["message"] == "must be between 1 and 1048576; using 1024"
    assert said["max_processes"]["message"] == "must be a number; using 64"
    assert said["leaf_modules"]["message"] == "must be a list of strings; using []"
    assert said["check-eagre"]["message"] == "not a setting of fxls; ignored"
    lines = [line for line in stderr.splitlines() if "[tool.fxls]" in line]
    assert lines[:2] == [
        f"fxls: pyproject.toml:6: [tool.fxls] `memory_limit_mb` = 1e+30: "
        f"{said['memory_limit_mb']['message']}",
        "fxls: pyproject.toml:7: [tool.fxls] `tmp_limit_mb` = nan: must be between 1 and "
        "1048576; using 1024"], stderr
    assert len(lines) == len(BAD_LINES)
    assert [code for code, _ in codes_at(document, source)] == ["FX001"]


def test_bad_values_are_configuration_notifications_in_sarif(layout: dict[str, Path]) -> None:
    project = layout["project"]
    (project / "pyproject.toml").write_text(BAD, encoding="utf-8")
    (project / "m.py").write_text(model([]), encoding="utf-8")
    document, _ = check(project, fmt="sarif")
    (invocation,) = document["runs"][0]["invocations"]
    notes = {n["descriptor"]["id"]: n for n in invocation["toolConfigurationNotifications"]}
    assert set(notes) == set(BAD_LINES)
    for key, line in BAD_LINES.items():
        (location,) = notes[key]["locations"]
        place = location["physicalLocation"]
        assert place["artifactLocation"]["uri"] == "pyproject.toml"
        assert place["region"]["startLine"] == line
    assert notes["tmp_limit_mb"]["message"]["text"] == (
        "`tmp_limit_mb` = nan: must be between 1 and 1048576; using 1024")
    assert [r["ruleId"] for r in document["runs"][0]["results"]] == ["FX001"]
