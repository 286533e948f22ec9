"""The editor's ``fxls`` settings: the window's (``initializationOptions``,
``workspace/didChangeConfiguration``) and each workspace folder's interpreter (asked with
``workspace/configuration``: a folder's ``python`` runs the code of its files)."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from fxls.server.client_traits import supports_configuration
from fxls.server.folders import folder_python
from fxls.server.language_server import FxlsServer
from fxls.server.reporting import tell

log = logging.getLogger("fxls.server")


def apply_settings(ls: FxlsServer, raw: Any) -> None:
    """The window's settings in ``raw`` (either form) replace the session's; each bad value
    is shown to the user."""
    ls.session.config = ls.session.config.updated(raw or {})
    for problem in ls.session.config.problems:
        tell(ls, problem, show=True, kind=types.MessageType.Warning)


async def load_folder_interpreters(ls: FxlsServer) -> None:
    """Ask the client for each workspace folder's ``fxls`` settings: a folder's
    ``python`` runs the code of its files (multi-root windows)."""
    folders = {to_fs_path(f.uri) or "": f.uri for f in ls.workspace.folders.values()}
    folders.pop("", None)
    if not folders or not supports_configuration(ls.client_capabilities):
        await ls.interpreters.update({})
        return
    ls.interpreters.loading()
    try:
        answers = await ls.workspace_configuration_async(types.ConfigurationParams(
            items=[types.ConfigurationItem(scope_uri=uri, section="fxls")
                   for uri in folders.values()]))
    except Exception as error:  # a client that cannot answer: the window's interpreter
        log.warning("workspace/configuration failed: %s", error)
        ls.interpreters.failed()
        return
    pythons = {path: python for path, answer in zip(folders, answers or [], strict=False)
               if (python := folder_python(answer)) is not None}
    await ls.interpreters.update(pythons)


async def reload_folder_interpreters(ls: FxlsServer) -> None:
    """Ask for the folders' interpreters again; if one changed, analyse every document
    again."""
    before = dict(ls.interpreters.pythons)
    await load_folder_interpreters(ls)
    if ls.interpreters.pythons != before:
        ls.scheduler.schedule_all()
