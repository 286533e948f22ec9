"""Positions in the negotiated encoding: utf-8 for Neovim, utf-16 for VS Code."""

from __future__ import annotations

from pathlib import Path

from pytest_lsp import LanguageClient

from tests.lsp_client import open_and_wait

TEXT = '''import torch
from torch import nn


class Sign(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        s = "😀→" if h.mean() > 0 else "←"
        return h
'''
LINE = 11
BEFORE = '        s = "😀→" if '
CONDITION = "h.mean() > 0"


def _range(diagnostics, code):
    return [
        (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
        if d.code == code
    ]


async def test_utf8_positions_for_neovim(nvim_client: LanguageClient, tmp_path: Path):
    path = tmp_path / "sign.py"
    path.write_text(TEXT, encoding="utf-8")
    diagnostics = await open_and_wait(nvim_client, path, TEXT)
    start = len(BEFORE.encode("utf-8"))
    assert _range(diagnostics, "FX001") == [(LINE, start, LINE, start + len(CONDITION))]


async def test_utf16_positions_for_vscode(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "sign.py"
    path.write_text(TEXT, encoding="utf-8")
    diagnostics = await open_and_wait(client, path, TEXT)
    start = len(BEFORE.encode("utf-16-le")) // 2
    assert _range(diagnostics, "FX001") == [(LINE, start, LINE, start + len(CONDITION))]
