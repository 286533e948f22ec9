"""A real client (pytest-lsp) talking to a real ``fxls serve`` over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities


async def open_and_wait(
    client: LanguageClient, path: Path, text: str, version: int = 1
) -> list[types.Diagnostic]:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )
    return await wait_for_version(client, uri, version)


def send_save(client: LanguageClient, path: Path, text: str, version: int) -> None:
    """What an editor sends when the user saves ``text``: didChange, then didSave."""
    uri = path.as_uri()
    path.write_text(text, encoding="utf-8")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri))
    )


async def save_and_wait(
    client: LanguageClient, path: Path, text: str, version: int
) -> list[types.Diagnostic]:
    send_save(client, path, text, version)
    return await wait_for_version(client, path.as_uri(), version)


async def wait_for_version(
    client: LanguageClient, uri: str, version: int
) -> list[types.Diagnostic]:
    """Wait for the publish of exactly this uri and version (earlier publishes are stale)."""
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == version:
            return list(params.diagnostics)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "fxls", "serve"]),
)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    # the VS Code capabilities we claim include refresh support: answer those requests
    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _code_lens_refresh(_params: None) -> None:
        return None

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _inlay_hint_refresh(_params: None) -> None:
        return None

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=tmp_path.as_uri(),
            initialization_options={"fxls": {"trace": {"timeout": 20}}},
        )
    )
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "fxls", "serve"]),
)
async def nvim_client(lsp_client: LanguageClient, tmp_path: Path):
    """A client that announces Neovim's capabilities: it negotiates utf-8 positions."""

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _inlay_hint_refresh(_params: None) -> None:
        return None

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _code_lens_refresh(_params: None) -> None:
        return None

    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("neovim"),
            root_uri=tmp_path.as_uri(),
            initialization_options={"fxls": {"trace": {"timeout": 20}}},
        )
    )
    yield
    await lsp_client.shutdown_session()
