"""A real client (pytest-lsp) talking to a real ``fxls serve`` over stdio."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

#: fxls.server.app.ANALYSIS_DONE (importing the server module here would build a server)
ANALYSIS_DONE = "fxls/analysisDone"


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
    """Wait until the analysis of exactly this uri and version is complete (the server then
    sends ``fxls/analysisDone``; its diagnostics may have been published before), and return
    its diagnostics."""
    done: set[tuple[str, int]] = client.fxls_done  # type: ignore[attr-defined]
    while (uri, version) not in done:
        await asyncio.sleep(0.005)
    return list(client.diagnostics.get(uri, []))


def track_analyses(client: LanguageClient) -> None:
    """Record the server's ``fxls/analysisDone`` notifications as (uri, version) pairs."""
    client.fxls_done = set()  # type: ignore[attr-defined]

    @client.feature(ANALYSIS_DONE)
    def _analysis_done(params: Any) -> None:  # not `object`: pygls would pass the client
        uri, version = _field(params, "uri"), _field(params, "version")
        client.fxls_done.add((uri, version))  # type: ignore[attr-defined]


def accept_registrations(client: LanguageClient) -> None:
    """Answer ``client/registerCapability`` as an editor does, recording each registration
    in ``client.registrations`` (method -> register options)."""
    client.registrations = {}  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        for registration in params.registrations:
            client.registrations[registration.method] = (  # type: ignore[attr-defined]
                registration.register_options)


def _field(params: Any, name: str) -> Any:
    return params[name] if isinstance(params, dict) else getattr(params, name)


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "fxls", "serve"]),
)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    track_analyses(lsp_client)
    accept_registrations(lsp_client)

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
    track_analyses(lsp_client)
    accept_registrations(lsp_client)

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
