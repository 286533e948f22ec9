"""One way for handler errors and user-facing problems to reach the client: :func:`tell`
sends a message as ``window/logMessage`` and, for what the user must know about, as
``window/showMessage`` (handlers' failures come here through ``handler_guard.guarded``).
"""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.lsp.server import LanguageServer

log = logging.getLogger("fxls.server")


def tell(ls: LanguageServer, message: str, *, show: bool = False,
         kind: types.MessageType = types.MessageType.Error) -> None:
    """Log ``message`` to the client (and show it, if ``show``); never raises."""
    try:
        ls.window_log_message(types.LogMessageParams(kind, message))
        if show:
            ls.window_show_message(types.ShowMessageParams(kind, message))
    except Exception:  # no transport (a test, or the client is gone): the log has it
        log.warning("could not send to the client: %s", message)
