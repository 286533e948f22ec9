"""``workspace/didChangeConfiguration``: the new settings, workers for the new interpreters,
and every open document analysed again."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.editor_settings import apply_settings, load_folder_interpreters
from fxls.server.language_server import FxlsServer


async def on_configuration(ls: FxlsServer, params: types.DidChangeConfigurationParams) -> None:
    apply_settings(ls, params.settings)
    config = ls.session.config
    await ls.interpreters.default.set_python(config.python, config.learn_libraries)
    await ls.interpreters.set_learn_libraries(config.learn_libraries)
    await load_folder_interpreters(ls)
    ls.scheduler.schedule_all()
