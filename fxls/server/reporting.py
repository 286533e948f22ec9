"""One way for handler errors and user-facing problems to reach the client.

:func:`reported` wraps an LSP handler: an exception is logged, sent as ``window/logMessage``,
and (for handlers whose failure the user must know about) as ``window/showMessage``; the
handler then answers ``default``. pygls would otherwise pop "Error in server" for a failed
notification, or fail a request that an editor asks dozens of times a minute.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

log = logging.getLogger("fxls.server")

F = TypeVar("F", bound=Callable[..., Any])


def tell(ls: LanguageServer, message: str, *, show: bool = False,
         kind: types.MessageType = types.MessageType.Error) -> None:
    """Log ``message`` to the client (and show it, if ``show``); never raises."""
    try:
        ls.window_log_message(types.LogMessageParams(kind, message))
        if show:
            ls.window_show_message(types.ShowMessageParams(kind, message))
    except Exception:  # no transport (a test, or the client is gone): the log has it
        log.warning("could not send to the client: %s", message)


def reported(default: Any = None, *, user_facing: bool = False) -> Callable[[F], F]:
    """Turn an exception in the decorated handler into a log line and a client message, and
    answer ``default`` (copied if it is a list)."""

    def decorate(handler: F) -> F:
        def fail(ls: LanguageServer) -> Any:
            log.exception("%s failed", handler.__name__)
            tell(ls, f"fxls: {handler.__name__} failed (see the fxls log)", show=user_facing)
            return list(default) if isinstance(default, list) else default

        if inspect.iscoroutinefunction(handler):
            @functools.wraps(handler)
            async def run_async(ls: LanguageServer, *args: Any) -> Any:
                try:
                    return await handler(ls, *args)
                except Exception:
                    return fail(ls)
            return run_async  # type: ignore[return-value]

        @functools.wraps(handler)
        def run(ls: LanguageServer, *args: Any) -> Any:
            try:
                return handler(ls, *args)
            except Exception:
                return fail(ls)
        return run  # type: ignore[return-value]

    return decorate
