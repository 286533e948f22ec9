"""``fxls serve`` started in a hostile workspace with ``PYTHONPATH=<ws>/src`` (issue 31): the
workspace's modules named like torch's dependencies or the standard library run neither in
the server nor in its worker; the document is still analysed (its jobs import from src)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, open_and_wait, serve_config
from tests.security.test_workspace_on_pythonpath import MODEL, hostile_workspace

TMP = Path(tempfile.mkdtemp(prefix="fxls-hostile-path-"))
WORKSPACE, MARKER = hostile_workspace(TMP)


# started in the workspace, as editors do
@pytest_lsp.fixture(config=serve_config(env={"PYTHONPATH": str(WORKSPACE / "src")},
                                        cwd=WORKSPACE))
async def client(lsp_client: LanguageClient):
    async with editor_session(lsp_client, editor="neovim", root=WORKSPACE,
                              timeout=30):
        yield
    shutil.rmtree(TMP, ignore_errors=True)


async def test_a_workspace_on_pythonpath_runs_nothing_outside_a_job(
        client: LanguageClient) -> None:
    diagnostics = await open_and_wait(client, WORKSPACE / "model.py", MODEL)
    assert diagnostics == []
    assert not MARKER.exists(), MARKER.read_text()
