"""A multi-root window: two workspace folders, each with its own ``fxls.python`` (answered to
``workspace/configuration`` per folder, as VS Code answers with each folder's settings and the
extension's own ``fxls.interpreter``). Each folder's files are analysed by a worker under its
own interpreter: two wrapper scripts that exec the real python with a marker (``TZ``, one of
the variables a job keeps), which the model file puts in the message of its FX100."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, open_and_wait, serve_config

MODEL = """\
import os

raise RuntimeError("analysed under " + os.environ.get("TZ", "no marker"))
"""


def _wrapper(path: Path, marker: str) -> Path:
    path.write_text(f'#!/bin/sh\nTZ={marker} exec "{sys.executable}" "$@"\n', encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest_lsp.fixture(config=serve_config())
async def multi_root(lsp_client: LanguageClient, tmp_path: Path):
    folders = {name: tmp_path / name for name in ("alpha", "beta", "plain")}
    for folder in folders.values():
        folder.mkdir()
    pythons = {
        folders["alpha"].as_uri(): str(_wrapper(tmp_path / "python-alpha", "FOLDER-ALPHA")),
        folders["beta"].as_uri(): str(_wrapper(tmp_path / "python-beta", "FOLDER-BETA")),
    }
    for uri, python in pythons.items():
        lsp_client.set_configuration(python, section="fxls.python", scope_uri=uri)
    lsp_client.configuration_asked = []  # type: ignore[attr-defined]
    answer = lsp_client.get_configuration

    def recording(*, section: str | None = None, scope_uri: str | None = None) -> Any:
        lsp_client.configuration_asked.append(scope_uri)  # type: ignore[attr-defined]
        return answer(section=section, scope_uri=scope_uri)

    lsp_client.get_configuration = recording  # type: ignore[method-assign]
    workspace = [types.WorkspaceFolder(f.as_uri(), name) for name, f in folders.items()]
    async with editor_session(lsp_client, folders=workspace, timeout=30):
        yield


async def _marker(client: LanguageClient, path: Path) -> str:
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(client, path, MODEL)
    (fx100,) = [d for d in diagnostics if d.code == "FX100"]
    return fx100.message


async def test_each_folder_runs_its_files_with_its_own_interpreter(
    multi_root: LanguageClient, tmp_path: Path
) -> None:
    client = multi_root
    assert "analysed under FOLDER-ALPHA" in await _marker(client, tmp_path / "alpha" / "m.py")
    assert "analysed under FOLDER-BETA" in await _marker(client, tmp_path / "beta" / "m.py")
    # a folder without one: the window's interpreter (the server's own python here)
    plain = await _marker(client, tmp_path / "plain" / "m.py")
    assert "FOLDER-" not in plain and "analysed under" in plain
    asked = set(client.configuration_asked)  # type: ignore[attr-defined]
    assert asked == {(tmp_path / name).as_uri() for name in ("alpha", "beta", "plain")}
    assert os.environ.get("TZ") != "FOLDER-ALPHA"


async def test_a_folder_added_later_gets_its_interpreter(
    multi_root: LanguageClient, tmp_path: Path
) -> None:
    client = multi_root
    gamma = tmp_path / "gamma"
    gamma.mkdir()
    client.set_configuration(str(_wrapper(tmp_path / "python-gamma", "FOLDER-GAMMA")),
                             section="fxls.python", scope_uri=gamma.as_uri())
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(gamma.as_uri(), "gamma")],
                                          removed=[])))
    assert "analysed under FOLDER-GAMMA" in await _marker(client, gamma / "m.py")
    assert gamma.as_uri() in client.configuration_asked  # type: ignore[attr-defined]
