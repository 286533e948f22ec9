"""``fxls serve`` started in a hostile workspace with ``PYTHONPATH=<ws>/src`` (issue 31): the
workspace's modules named like torch's dependencies or the standard library run neither in
the server nor in its worker; the document is still analysed (its jobs import from src)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.server.conftest import accept_registrations, open_and_wait, track_analyses
from tests.worker.test_workspace_on_pythonpath import MODEL, hostile_workspace

TMP = Path(tempfile.mkdtemp(prefix="fxls-hostile-path-"))
WORKSPACE, MARKER = hostile_workspace(TMP)


@pytest_lsp.fixture(config=ClientServerConfig(
    # started in the workspace, as editors do
    server_command=["env", "-C", str(WORKSPACE), sys.executable, "-m", "fxls", "serve"],
    server_env={**os.environ, "PYTHONPATH": str(WORKSPACE / "src")}))
async def client(lsp_client: LanguageClient):
    track_analyses(lsp_client)
    accept_registrations(lsp_client)
    for refresh in (types.WORKSPACE_INLAY_HINT_REFRESH, types.WORKSPACE_CODE_LENS_REFRESH):
        lsp_client.feature(refresh)(lambda _params: None)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"), root_uri=WORKSPACE.as_uri(),
        initialization_options={"fxls": {"trace": {"timeout": 30}}}))
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(TMP, ignore_errors=True)


async def test_a_workspace_on_pythonpath_runs_nothing_outside_a_job(
        client: LanguageClient) -> None:
    diagnostics = await open_and_wait(client, WORKSPACE / "model.py", MODEL)
    assert diagnostics == []
    assert not MARKER.exists(), MARKER.read_text()
