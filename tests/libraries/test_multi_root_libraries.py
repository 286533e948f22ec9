"""A multi-root window whose folder has an interpreter of its own: at start, that folder's
worker (not the window's) learns the libraries the folder's files import (issues 21, 23)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxls.worker.pool import IDLE_CHILDREN
from tests import probes
from tests.libraries.test_workspace_libraries import MODEL, SITE, holders
from tests.lsp.test_multi_root import _wrapper
from tests.lsp_client import editor_session, open_and_wait, serve_config
from tests.worker.test_worker import children_of

pytestmark = pytest.mark.skipif(not probes.SIBLING_FORKS,
                                reason="libraries are learned by zygotes, which need Linux")

MARKER = "FOLDER-ALPHA"


@pytest_lsp.fixture(config=serve_config(env={"PYTHONPATH": str(SITE)}))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    alpha, plain = tmp_path / "alpha", tmp_path / "plain"
    alpha.mkdir()
    plain.mkdir()
    (alpha / "model.py").write_text(MODEL)
    (plain / "other.py").write_text("import json\n")
    python = _wrapper(tmp_path / "python-alpha", MARKER)
    lsp_client.set_configuration(str(python), section="fxls.python", scope_uri=alpha.as_uri())
    folders = [types.WorkspaceFolder(alpha.as_uri(), "alpha"),
               types.WorkspaceFolder(plain.as_uri(), "plain")]
    async with editor_session(lsp_client, folders=folders, timeout=30):
        yield


def marked(pid: int) -> bool:
    try:
        return f"TZ={MARKER}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


async def test_a_folders_own_worker_learns_its_files_libraries_at_start(
    client: LanguageClient, tmp_path: Path,
) -> None:
    server = client._server  # type: ignore[attr-defined]
    deadline = time.monotonic() + 90
    alpha_workers: list[int] = []
    while time.monotonic() < deadline:
        alpha_workers = [pid for pid in children_of(server.pid) if marked(pid)]
        if alpha_workers and len(holders(alpha_workers[0])) > IDLE_CHILDREN:
            break
        await asyncio.sleep(0.2)
    assert len(alpha_workers) == 1 and len(holders(alpha_workers[0])) > IDLE_CHILDREN
    # the window's worker has nothing of it (no file of its folders imports it)
    for pid in children_of(server.pid):
        if not marked(pid):
            assert holders(pid) == []
    diagnostics = await open_and_wait(client, tmp_path / "alpha" / "model.py", MODEL)
    assert [d for d in diagnostics if d.code == "FX100"] == []
