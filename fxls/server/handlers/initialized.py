"""``initialized``: ask for the folders' interpreters and to watch the project's files, and
have the workers learn the libraries the workspace imports."""

from __future__ import annotations

import logging

from lsprotocol import types

from fxls.server.client_traits import supports_configuration, watches_files
from fxls.server.editor_settings import load_folder_interpreters
from fxls.server.language_server import FxlsServer
from fxls.server.session import workspace_roots

log = logging.getLogger("fxls.server")

WATCH_REGISTRATION_ID = "fxls-watch-python"


def on_initialized(ls: FxlsServer, params: types.InitializedParams) -> None:
    if supports_configuration(ls.client_capabilities) and ls.workspace.folders:
        ls.interpreters.loading()  # analyses of the files opened next wait for the answer
        ls.background.spawn(load_folder_interpreters(ls))
    if watches_files(ls.client_capabilities):
        ls.background.spawn(watch_files(ls))
    ls.background.spawn(ls.interpreters.warm(workspace_roots(ls.workspace)))


async def watch_files(ls: FxlsServer) -> None:
    """Ask the client to tell us about changes to the project's Python files."""
    watchers = [types.FileSystemWatcher(glob_pattern="**/*.py"),
                types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
    registration = types.Registration(
        id=WATCH_REGISTRATION_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))
    try:
        await ls.client_register_capability_async(types.RegistrationParams([registration]))
    except Exception as error:
        log.warning("the client refused to watch files: %s", error)
