"""A hostile repository on the editor's PYTHONPATH (issue 31): a project's dev shell sets
``PYTHONPATH=<ws>/src``, and the repository commits ``src/evil-0.1.dist-info`` next to
``src/evilpkg``. With learning on, the worker learns the workspace's libraries outside any
job; evilpkg must not be one of them: its import-time code never runs outside a job."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from fxls.worker.pool import IDLE_CHILDREN
from tests import probes
from tests.libraries.test_workspace_libraries import SITE, holders
from tests.lsp_client import editor_session, open_and_wait, serve_config
from tests.worker.test_worker import children_of

pytestmark = pytest.mark.skipif(not probes.SIBLING_FORKS,
                                reason="libraries are learned by zygotes, which need Linux")

WORKSPACE = "hostile-ws"
MARKER = "outside-marker"
MODEL = """import countlib_ws  # noqa: F401
import evilpkg  # noqa: F401
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


def hostile_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / WORKSPACE
    src = workspace / "src"
    (src / "evil-0.1.dist-info").mkdir(parents=True)
    (src / "evil-0.1.dist-info" / "METADATA").write_text("Name: evil\nVersion: 0.1\n")
    (src / "evilpkg").mkdir()
    marker = tmp_path / "outside" / MARKER
    marker.parent.mkdir()
    (src / "evilpkg" / "__init__.py").write_text(
        f"import os\ntry:\n    with open({str(marker)!r}, 'a') as f:\n"
        "        f.write(f'{os.getpid()}\\n')\nexcept OSError:\n    pass\n")
    (workspace / "model.py").write_text(MODEL)
    return workspace


#: made at import: the server's PYTHONPATH names it
HOSTILE = hostile_workspace(Path(tempfile.mkdtemp(prefix="fxls-hostile-")))


@pytest_lsp.fixture(config=serve_config(
    env={"PYTHONPATH": os.pathsep.join([str(HOSTILE / "src"), str(SITE)])}))
async def client(lsp_client: LanguageClient):
    async with editor_session(lsp_client, editor="neovim", root=HOSTILE,
                              timeout=30):
        yield
    shutil.rmtree(HOSTILE.parent, ignore_errors=True)


async def test_a_workspace_folder_on_pythonpath_is_not_learned(client: LanguageClient) -> None:
    workspace = HOSTILE
    marker = workspace.parent / "outside" / MARKER
    server = client._server  # type: ignore[attr-defined]
    deadline = time.monotonic() + 90
    workers: list[int] = []
    # the library outside the workspace is learned: learning happened
    while time.monotonic() < deadline:
        workers = children_of(server.pid)
        if workers and len(holders(workers[0])) > IDLE_CHILDREN:
            break
        await asyncio.sleep(0.2)
    assert len(workers) == 1 and len(holders(workers[0])) > IDLE_CHILDREN
    # a job imports evilpkg too and offers it; the worker must refuse it again
    for _ in range(2):
        diagnostics = await open_and_wait(client, workspace / "model.py", MODEL)
        assert [d for d in diagnostics if d.code == "FX100"] == []
        await asyncio.sleep(2.0)
    assert not marker.exists(), marker.read_text()
