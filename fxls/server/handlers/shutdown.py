"""``shutdown``: the workers are closed."""

from __future__ import annotations

from typing import Any

from fxls.server.language_server import FxlsServer


async def on_shutdown(ls: FxlsServer, *args: Any) -> None:
    await ls.interpreters.close()
