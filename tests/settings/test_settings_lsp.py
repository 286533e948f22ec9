"""Project settings through ``fxls serve``: a bad or refused ``[tool.fxls]`` value is a
diagnostic on pyproject.toml at its line (gone once fixed), and a wider policy comes only
from the user's editor settings (``fxls.allowWrite``), never from the repository."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import open_and_wait, save_and_wait

MODEL = """import torch
from torch import nn

try:
    open({target!r}, "w").write("escaped")
except OSError:
    pass


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""
FX001_LINE = 11  # 0-based: `if x.sum() > 0:`
BAD = """[project]
name = "victim"

[tool.fxls]
timeout = 20
memory_limit_mb = 1e30
allow_write = ["{outside}"]
tmp_limit_mb = "big"
"""


async def test_bad_and_refused_settings_are_shown_on_pyproject(
    client: LanguageClient, tmp_path: Path
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text(BAD.format(outside=outside), encoding="utf-8")
    path = project / "gate.py"
    text = MODEL.format(target=str(outside / "written.txt"))
    path.write_text(text, encoding="utf-8")
    async with asyncio.timeout(120):
        diagnostics = await open_and_wait(client, path, text)
    assert ("FX001", FX001_LINE) in [(d.code, d.range.start.line) for d in diagnostics]
    assert not (outside / "written.txt").exists()
    shown = {d.code: d for d in client.diagnostics.get(pyproject.as_uri(), [])}
    assert {key: d.range.start.line for key, d in shown.items()} == {
        "memory_limit_mb": 5, "allow_write": 6, "tmp_limit_mb": 7}
    value = shown["allow_write"].range
    assert BAD.format(outside=outside).splitlines()[6][
        value.start.character:value.end.character] == f'"{outside}"'
    assert "refused" in shown["allow_write"].message
    assert shown["memory_limit_mb"].message.startswith(
        "[tool.fxls] `memory_limit_mb` = 1e+30: must be between 256 and 1048576; using ")
    assert shown["tmp_limit_mb"].severity == types.DiagnosticSeverity.Warning

    pyproject.write_text("[tool.fxls]\ntimeout = 20\n", encoding="utf-8")
    async with asyncio.timeout(120):
        await save_and_wait(client, path, text, 2)
    assert list(client.diagnostics[pyproject.as_uri()]) == []  # cleared once fixed


async def test_the_editor_setting_allows_a_folder_outside(
    client: LanguageClient, tmp_path: Path
) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 20\n", encoding="utf-8")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fxls": {"trace": {"timeout": 20}, "allowWrite": [str(outside)]}}))
    path = project / "gate.py"
    text = MODEL.format(target=str(outside / "written.txt"))
    path.write_text(text, encoding="utf-8")
    async with asyncio.timeout(120):
        await open_and_wait(client, path, text)
        while not (outside / "written.txt").exists():  # the analysis after the settings
            await asyncio.sleep(0.05)
    assert (outside / "written.txt").read_text() == "escaped"
