"""What the client can do, read from the capabilities it announced at ``initialize``."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer


def position_encoding(server: LanguageServer) -> str:
    """The position encoding negotiated with the client (Neovim picks utf-8)."""
    encoding = server.server_capabilities.position_encoding
    return str(encoding.value if hasattr(encoding, "value") else encoding or "utf-16")


def supports_configuration(capabilities: types.ClientCapabilities) -> bool:
    """The client answers ``workspace/configuration`` (per workspace folder)."""
    workspace = capabilities.workspace
    return bool(workspace is not None and workspace.configuration)


def pulls_diagnostics(capabilities: types.ClientCapabilities) -> bool:
    """Whether the client pulls diagnostics and re-pulls when the server asks: Neovim 0.11
    pulls only on open and change and cannot be told that a save's trace is done."""
    text_document, workspace = capabilities.text_document, capabilities.workspace
    return bool(
        text_document is not None and text_document.diagnostic is not None
        and workspace is not None and workspace.diagnostics is not None
        and workspace.diagnostics.refresh_support
    )


def watches_files(capabilities: types.ClientCapabilities) -> bool:
    """The client registers file watchers the server asks for."""
    workspace = capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    return bool(watched is not None and watched.dynamic_registration)


def versioned_edits(capabilities: types.ClientCapabilities) -> bool:
    """The client takes workspace edits as ``documentChanges`` (for one document version)."""
    workspace = capabilities.workspace
    edit = workspace.workspace_edit if workspace is not None else None
    return bool(edit and edit.document_changes)


def refreshes_inlay_hints(capabilities: types.ClientCapabilities) -> bool:
    workspace = capabilities.workspace
    return bool(workspace is not None and workspace.inlay_hint
                and workspace.inlay_hint.refresh_support)


def refreshes_code_lenses(capabilities: types.ClientCapabilities) -> bool:
    workspace = capabilities.workspace
    return bool(workspace is not None and workspace.code_lens
                and workspace.code_lens.refresh_support)
