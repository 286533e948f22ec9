"""A real client (pytest-lsp) talking to a real ``fxls serve`` over stdio: how the tests start
the server and hold an editor's session, for the LSP tests of every feature (the ``client``
and ``nvim_client`` fixtures in tests/conftest.py are built from these)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from fxls.server.scheduler import ANALYSIS_DONE

#: marks a test that runs on its module's one server (the ``module_client`` fixture): the
#: test runs in that server's event loop
on_the_module_server = pytest.mark.asyncio(loop_scope="module")


async def open_and_wait(
    client: LanguageClient, path: Path, text: str, version: int = 1
) -> list[types.Diagnostic]:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )
    return await wait_for_version(client, uri, version)


def record_publishes(client: LanguageClient, path: Path) -> list[types.PublishDiagnosticsParams]:
    """Every publish for ``path`` from now on, in the order the client got them (wraps
    pytest-lsp's own handler; on a shared server, other documents' publishes are not
    recorded)."""
    uri, seen = path.as_uri(), []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def recording(*args: Any) -> Any:
        if args[-1].uri == uri:
            seen.append(args[-1])
        return original(*args)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = recording
    return seen


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
    """Record the server's ``fxls/analysisDone`` notifications as (uri, version) pairs
    (``client.fxls_done``), and each one's params by its pair (``client.fxls_done_params``:
    the targets the status item shows)."""
    client.fxls_done = set()  # type: ignore[attr-defined]
    client.fxls_done_params = {}  # type: ignore[attr-defined]

    @client.feature(ANALYSIS_DONE)
    def _analysis_done(params: Any) -> None:  # not `object`: pygls would pass the client
        uri, version = _field(params, "uri"), _field(params, "version")
        client.fxls_done_params[(uri, version)] = params  # type: ignore[attr-defined]
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


def serve_config(*, env: dict[str, str] | None = None, cwd: Path | None = None
                 ) -> ClientServerConfig:
    """``fxls serve`` as the tests start it: with these environment variables added, and
    started in ``cwd`` (as editors start it in the workspace)."""
    command = [sys.executable, "-m", "fxls", "serve"]
    if cwd is not None:
        command = ["env", "-C", str(cwd), *command]
    return ClientServerConfig(server_command=command,
                              server_env={**os.environ, **env} if env is not None else None)


@contextlib.asynccontextmanager
async def editor_session(
    client: LanguageClient,
    *,
    editor: str | types.ClientCapabilities = "visual-studio-code",
    root: Path | None = None,
    folders: list[types.WorkspaceFolder] | None = None,
    timeout: float = 20,
    options: dict[str, Any] | None = None,
) -> AsyncIterator[types.InitializeResult]:
    """An LSP session as an editor holds one: ``client`` records the analyses done and the
    capabilities registered, answers the server's refresh requests, announces ``editor``'s
    capabilities (a name pytest-lsp knows, or the capabilities) with ``root`` or ``folders``
    as the workspace, and shuts the server down at the end. ``options`` (the
    initializationOptions) default to a trace ``timeout`` for a busy machine."""
    track_analyses(client)
    accept_registrations(client)
    for refresh in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLAY_HINT_REFRESH):
        client.feature(refresh)(lambda _params: None)
    capabilities = client_capabilities(editor) if isinstance(editor, str) else editor
    result = await client.initialize_session(types.InitializeParams(
        capabilities=capabilities,
        root_uri=root.as_uri() if root is not None else None,
        workspace_folders=folders,
        initialization_options=(options if options is not None
                                else {"fxls": {"trace": {"timeout": timeout}}}),
    ))
    yield result
    await client.shutdown_session()


def own_folder_in(root: Path, test_name: str) -> Path:
    """A new folder of ``root`` for one test, named after it."""
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", test_name)[:48] + "-"
    return Path(tempfile.mkdtemp(prefix=prefix, dir=root))


def close_documents_in(client: LanguageClient, folder: Path) -> None:
    """Close every document the server analysed in ``folder``, as an editor does when its
    tab closes: the next test on the same server starts with none of them open."""
    inside = folder.as_uri() + "/"
    done: set[tuple[str, int]] = client.fxls_done  # type: ignore[attr-defined]
    for uri in sorted({uri for uri, _version in done if uri.startswith(inside)}):
        client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
