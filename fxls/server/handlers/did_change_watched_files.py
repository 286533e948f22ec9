"""``workspace/didChangeWatchedFiles``: files changed on disk (not through this editor's
buffers) re-analyse the open documents that depend on them; a changed pyproject.toml
re-analyses them all."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types
from pygls.uris import to_fs_path

from fxls.server.language_server import FxlsServer
from fxls.server.scheduler import DEPENDENTS_DELAY_S


def on_watched_files(ls: FxlsServer, params: types.DidChangeWatchedFilesParams) -> None:
    documents = ls.session.documents
    open_paths = {os.path.realpath(document.path) for document in documents.values()}
    dependents: set[str] = set()
    for change in params.changes:
        path = to_fs_path(change.uri) or change.uri
        if Path(path).name == "pyproject.toml":
            dependents.update(documents)
            continue
        if os.path.realpath(path) in open_paths:
            continue  # the editor's text is what counts; its save re-analyses
        dependents.update(ls.scheduler.dependents_of(change.uri))
    for uri in sorted(dependents):
        ls.scheduler.schedule(uri, DEPENDENTS_DELAY_S)
