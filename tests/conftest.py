"""The LSP client fixtures every feature's server tests share (the helpers are in
tests/lsp_client.py): an editor session with a real ``fxls serve`` rooted at the test's
``tmp_path``."""

from __future__ import annotations

from pathlib import Path

import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, serve_config


@pytest_lsp.fixture(config=serve_config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    async with editor_session(lsp_client, root=tmp_path):
        yield


@pytest_lsp.fixture(config=serve_config())
async def nvim_client(lsp_client: LanguageClient, tmp_path: Path):
    """A client that announces Neovim's capabilities: it negotiates utf-8 positions."""
    async with editor_session(lsp_client, editor="neovim", root=tmp_path):
        yield
