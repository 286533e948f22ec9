"""A save that changes nothing the analysis reads is not analysed again (issue 33: the
export and compile tier "is skipped for a text whose fingerprint it has already analysed";
pytest-lsp client, real ``fxls serve`` and worker).

The model reads a flag file at import, which the server's fingerprint does not cover: a
graph break appears only when the job runs again after the flag changed. So the
diagnostics say whether the compile tier ran."""

from __future__ import annotations

from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import (
    editor_session,
    open_and_wait,
    send_save,
    serve_config,
    wait_for_version,
)

MODEL = '''\
from pathlib import Path

import torch
from torch import nn

BRANCH = Path(__file__).with_name("flag.txt").read_text().strip() == "branch"


# fxls: targets compile
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):  # fxls: args (torch.randn(2, 8),)
        x = self.proj(x)
        if BRANCH and x.sum() > 0:
            x = x * 2
        return x
'''


@pytest_lsp.fixture(config=serve_config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    async with editor_session(lsp_client, root=tmp_path, timeout=300):
        yield


def _codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(item.code) for item in diagnostics)


async def test_an_unchanged_save_reuses_the_report_and_a_changed_text_runs_again(
        client: LanguageClient, tmp_path: Path) -> None:
    flag, model = tmp_path / "flag.txt", tmp_path / "model.py"
    flag.write_text("straight")
    model.write_text(MODEL)
    assert _codes(await open_and_wait(client, model, MODEL)) == []

    flag.write_text("branch")  # seen only by a job that runs again
    send_save(client, model, MODEL, 2)  # the same text, a new version (a change undone)
    assert _codes(await wait_for_version(client, model.as_uri(), 2)) == []
    send_save(client, model, MODEL + "\n", 3)
    assert _codes(await wait_for_version(client, model.as_uri(), 3)) == ["FX301"]
