"""At start, the server has its worker learn the libraries the workspace's files import
(issue 23): the first file opened finds them loaded in its job process."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from fxls.worker.pool import IDLE_CHILDREN
from tests import probes
from tests.lsp_client import editor_session, open_and_wait, serve_config
from tests.worker.test_worker import children_of

SITE = Path(__file__).resolve().parent.parent / "data" / "learned_site"
LIBRARY_FILE = str(SITE / "countlib_ws" / "__init__.py")
MODEL = """import sys

PRELOADED = "countlib_ws" in sys.modules
import countlib_ws  # noqa: E402
from torch import nn  # noqa: E402

if not PRELOADED:
    raise RuntimeError("the job imported countlib_ws itself")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""

pytestmark = pytest.mark.skipif(not probes.SIBLING_FORKS,
                                reason="libraries are learned by zygotes, which need Linux")


@pytest_lsp.fixture(config=serve_config(env={"PYTHONPATH": str(SITE)}))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "model.py").write_text(MODEL)
    async with editor_session(lsp_client, editor="neovim", root=tmp_path,
                              timeout=30):
        yield


def holders(pid: int) -> list[int]:
    """``pid`` and those of its children that have the library's file open."""
    found = []
    for candidate in [pid, *children_of(pid)]:
        try:
            fds = os.listdir(f"/proc/{candidate}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{candidate}/fd/{fd}") == LIBRARY_FILE:
                    found.append(candidate)
                    break
            except OSError:
                pass
    return found


async def test_the_first_file_opened_finds_the_workspaces_libraries_loaded(
    client: LanguageClient, tmp_path: Path,
) -> None:
    server = client._server  # type: ignore[attr-defined]
    deadline = time.monotonic() + 90
    workers: list[int] = []
    # the worker starts at once, and its zygote and idle job processes import the library
    while time.monotonic() < deadline:
        workers = children_of(server.pid)
        if workers and len(holders(workers[0])) > IDLE_CHILDREN:
            break
        await asyncio.sleep(0.2)
    assert len(workers) == 1 and len(holders(workers[0])) > IDLE_CHILDREN
    assert workers[0] not in holders(workers[0])  # the worker never imported it
    diagnostics = await open_and_wait(client, tmp_path / "model.py", MODEL)
    assert [d for d in diagnostics if d.code == "FX100"] == []
