"""``fxls.checkProject``: analyse every Python file of the workspace folders; the answer
summarises (``project_check.ProjectCheck.run``)."""

from __future__ import annotations

from typing import Any

from fxls.server.language_server import FxlsServer

CHECK_PROJECT = "fxls.checkProject"


async def check_project(ls: FxlsServer, *args: Any) -> dict[str, Any]:
    """Analyse every Python file of the workspace folders; returns a summary."""
    return await ls.project_check.run()
