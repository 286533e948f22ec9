"""The one guard around every LSP handler (``routes.routed`` puts it on each route): a
handler that raises is logged with its method's name, said to the client
(``reporting.tell``; shown too where the user must know) and answers its method's empty
result, so a request is always answered and a failure never ends the session. Without it
pygls would pop "Error in server" for a failed notification, or fail a request that an
editor asks dozens of times a minute.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

from pygls.lsp.server import LanguageServer

from fxls.server.reporting import tell

log = logging.getLogger("fxls.server")


def guarded(method: str, handler: Callable[..., Any], empty: list[Any] | None = None, *,
            user_facing: bool = False) -> Callable[..., Any]:
    """``handler`` answering ``empty`` (a new list each time, for list answers) when it
    raises; the failure is logged with ``method`` and shown to the user if ``user_facing``.
    ``functools.wraps`` keeps the handler's signature, from which pygls sees it takes the
    server."""

    def failed(ls: LanguageServer) -> Any:
        log.exception("%s failed", method)
        tell(ls, f"fxls: {method} failed (see the fxls log)", show=user_facing)
        return None if empty is None else list(empty)

    if inspect.iscoroutinefunction(handler):
        @functools.wraps(handler)
        async def answer_async(ls: LanguageServer, *args: Any) -> Any:
            try:
                return await handler(ls, *args)
            except Exception:
                return failed(ls)
        return answer_async

    @functools.wraps(handler)
    def answer(ls: LanguageServer, *args: Any) -> Any:
        try:
            return handler(ls, *args)
        except Exception:
            return failed(ls)
    return answer
