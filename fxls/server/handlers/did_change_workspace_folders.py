"""``workspace/didChangeWorkspaceFolders``: pygls has added and removed them; each folder's
interpreter is asked for again (analyses of files opened from now on wait for the answer),
and the libraries the new folders' files import are learned in the background."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from fxls.server.client_traits import supports_configuration
from fxls.server.editor_settings import reload_folder_interpreters
from fxls.server.language_server import FxlsServer


def on_workspace_folders(ls: FxlsServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    if supports_configuration(ls.client_capabilities):
        ls.interpreters.loading()
    ls.background.spawn(reload_folder_interpreters(ls))
    added = [to_fs_path(folder.uri) or "" for folder in params.event.added]
    if added:
        ls.background.spawn(ls.interpreters.warm(added))
