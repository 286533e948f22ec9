"""``fxls.restartWorker``: new workers, and every open document analysed again."""

from __future__ import annotations

from typing import Any

from fxls.server.language_server import FxlsServer

RESTART_WORKER = "fxls.restartWorker"


async def restart_worker(ls: FxlsServer, *args: Any) -> bool:
    await ls.interpreters.restart()
    ls.scheduler.schedule_all()
    return True
