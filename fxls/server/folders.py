"""The interpreter that runs a file's code, per workspace folder (multi-root windows).

``fxls.python`` is read for each workspace folder (``workspace/configuration`` with the
folder's ``scopeUri``: VS Code answers with the folder's own settings, Neovim with its
``settings``); a file is analysed by a worker under the python of the innermost folder that
holds it, else under the window's ``fxls.python``. One worker per distinct interpreter,
started when a file needs it, or at start and when folders are added to learn the libraries
its folders' files import (``warm``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from fxls.server.analysis_service import AnalysisService

log = logging.getLogger(__name__)

#: how long an analysis waits for the folders' settings before it uses the window's
SETTINGS_WAIT_S = 5.0


def folder_python(answer: Any) -> str | None:
    """The ``python`` of one folder's ``fxls`` section (the nested or the dotted form)."""
    if not isinstance(answer, dict):
        return None
    section = answer.get("fxls", answer)
    value = section.get("python") if isinstance(section, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def innermost(path: str, folders: Iterable[str]) -> str | None:
    """The innermost of ``folders`` that holds ``path``."""
    best: str | None = None
    for folder in folders:
        if not folder:
            continue
        prefix = folder.rstrip(os.sep) + os.sep
        inside = path == folder or path.startswith(prefix)
        if inside and (best is None or len(folder) > len(best)):
            best = folder
    return best


def _same(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


class FolderInterpreters:
    """Workers by interpreter, and the interpreter of each workspace folder."""

    def __init__(self, default: AnalysisService,
                 make: Callable[[str], AnalysisService] | None = None) -> None:
        #: the window's worker (``fxls.python``), for files outside every folder with its own
        self.default = default
        #: a worker for another interpreter; by default with the window's learnLibraries
        self._make = make or (lambda python: AnalysisService(
            python, learn_libraries=self.default.learn_libraries))
        #: folder path -> its ``fxls.python``
        self.pythons: dict[str, str] = {}
        self._others: dict[str, AnalysisService] = {}
        self._ready = asyncio.Event()
        self._ready.set()

    def loading(self) -> None:
        """The folders' settings are being asked for: analyses wait for them (a while)."""
        self._ready.clear()

    async def update(self, pythons: dict[str, str]) -> None:
        """The folders' interpreters as the client answered; workers no folder uses are
        stopped."""
        self.pythons = dict(pythons)
        self._ready.set()
        used = set(self.pythons.values())
        for python in [p for p in self._others if p not in used]:
            await self._others.pop(python).close()

    def failed(self) -> None:
        self._ready.set()

    async def for_path(self, path: str) -> AnalysisService:
        """The worker for a file: its folder's interpreter's, else the window's."""
        if not self._ready.is_set():
            try:
                await asyncio.wait_for(self._ready.wait(), SETTINGS_WAIT_S)
            except TimeoutError:
                log.warning("no answer to workspace/configuration: the window's interpreter")
        return self._service_for(path)

    async def warm(self, folders: list[str]) -> None:
        """Each worker learns, in the background, the libraries its own folders' files
        import (a folder with an interpreter of its own: that interpreter's worker; the
        others: the window's), once the folders' settings are known."""
        groups: dict[int, tuple[AnalysisService, list[str]]] = {}
        for folder in folders:
            service = await self.for_path(folder)
            groups.setdefault(id(service), (service, []))[1].append(folder)
        await asyncio.gather(*(service.warm(paths) for service, paths in groups.values()))

    async def set_learn_libraries(self, learn: bool) -> None:
        """The ``worker.learnLibraries`` setting changed: the window's worker is the
        caller's; the folders' workers restart with it."""
        for service in list(self._others.values()):
            await service.set_python(service.python, learn)

    def _service_for(self, path: str) -> AnalysisService:
        folder = innermost(path, self.pythons)
        python = self.pythons.get(folder) if folder is not None else None
        if python is None or _same(python, self.default.python):
            return self.default
        service = self._others.get(python)
        if service is None:
            service = self._others[python] = self._make(python)
        return service

    def services(self) -> list[AnalysisService]:
        return [self.default, *self._others.values()]

    async def restart(self) -> None:
        for service in self.services():
            await service.restart()

    async def close(self) -> None:
        for service in self.services():
            await service.close()
