"""Work-done progress: one token for every trace in flight, and one per project check.

Opening or saving files starts traces that overlap (a document, its dependents, a
settings change re-tracing everything). Each used to get its own begin/end pair, so the
editor showed two or more spinners for one save. :class:`TraceProgress` keeps a single
progress while anything is being traced: it begins with the first trace, reports the
files in flight and a percentage (each trace counts 0 -> 1/2 when tracing's diagnostics
are in -> 1 when its complete report is), and ends when the last one does. It is
cancellable: cancelling stops the traces in flight (their documents keep their last
results).

:class:`TaskProgress` is a plain cancellable progress with percentages for one long task
(``fxls.checkProject``). Neither ever fails the work it reports on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.progress import Progress

log = logging.getLogger(__name__)

_ids = itertools.count(1)


def supported(server: LanguageServer) -> bool:
    window = server.client_capabilities.window
    return bool(window and window.work_done_progress)


@dataclass(slots=True)
class _Item:
    label: str
    fraction: float
    cancel: Callable[[], None]


class TraceProgress:
    """One progress for all traces in flight (see the module's docstring)."""

    TITLE = "fxls"

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.token: str | None = None
        self._items: dict[str, _Item] = {}
        self._finished = 0
        #: the highest percentage sent for the current token: it never goes back (LSP:
        #: "steadily rising"), even when a new trace joins and the true share drops
        self._shown = 0
        self._creating: asyncio.Task[None] | None = None

    def start(self, key: str, label: str, cancel: Callable[[], None]) -> None:
        """A trace of ``key`` (shown as ``label``) started; ``cancel`` stops it."""
        if not supported(self.server):
            return
        self._items[key] = _Item(label, 0.0, cancel)
        if self.token is not None:
            self._report()
        elif self._creating is None:
            self._creating = asyncio.ensure_future(self._begin())

    def advance(self, key: str, fraction: float) -> None:
        item = self._items.get(key)
        if item is not None and fraction > item.fraction:
            item.fraction = fraction
            self._report()

    def finish(self, key: str) -> None:
        if self._items.pop(key, None) is None:
            return
        self._finished += 1
        if self._items:
            self._report()
            return
        self._finished, self._shown = 0, 0
        if self.token is not None:
            token, self.token = self.token, None
            self._send(lambda p: p.end(token, types.WorkDoneProgressEnd()))
            self.server.work_done_progress.tokens.pop(token, None)  # pygls #607

    def cancelled(self, token: object) -> bool:
        """The client cancelled ``token``: stop every trace in flight if it is ours."""
        if token is None or token != self.token:
            return False
        for item in list(self._items.values()):
            try:
                item.cancel()
            except Exception:
                log.exception("cancelling a trace failed")
        return True

    def percentage(self) -> int:
        """The share of the traces in flight done so far, never less than before."""
        total = self._finished + len(self._items)
        done = self._finished + sum(item.fraction for item in self._items.values())
        self._shown = max(self._shown, int(100 * done / total) if total else 100)
        return self._shown

    def message(self) -> str:
        labels = [item.label for item in self._items.values()]
        if len(labels) > 3:
            labels = [*labels[:3], f"{len(labels) - 3} more"]
        return "tracing " + ", ".join(labels)

    async def _begin(self) -> None:
        token = f"fxls-trace-{next(_ids)}"
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception:
            log.warning("the client refused a progress token", exc_info=True)
            self._creating = None
            return
        self._creating = None
        if not self._items:  # everything finished while the client answered
            self._finished, self._shown = 0, 0
            self.server.work_done_progress.tokens.pop(token, None)
            return
        self.token = token
        self._send(lambda p: p.begin(token, types.WorkDoneProgressBegin(
            title=self.TITLE, message=self.message(), percentage=self.percentage(),
            cancellable=True)))

    def _report(self) -> None:
        token = self.token
        if token is None:
            return
        self._send(lambda p: p.report(token, types.WorkDoneProgressReport(
            message=self.message(), percentage=self.percentage(), cancellable=True)))

    def _send(self, action: Callable[[Progress], None]) -> None:
        try:
            action(self.server.work_done_progress)
        except Exception:
            log.warning("sending progress failed", exc_info=True)


class TaskProgress:
    """A cancellable progress with percentages around one task; ``cancelled`` is set when
    the client cancels it."""

    def __init__(self, server: LanguageServer, title: str) -> None:
        self.server, self.title = server, title
        self.token = f"fxls-task-{next(_ids)}"
        self.enabled = supported(server)
        self.cancelled = asyncio.Event()

    async def __aenter__(self) -> TaskProgress:
        if self.enabled:
            try:
                await self.server.work_done_progress.create_async(self.token)
                self.server.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
                    title=self.title, percentage=0, cancellable=True))
            except Exception:
                self.enabled = False
        return self

    def report(self, message: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        percentage = int(100 * done / total) if total else 100
        try:
            self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message, percentage=percentage, cancellable=True))
        except Exception:
            log.warning("sending progress failed", exc_info=True)

    async def __aexit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        try:
            message = "cancelled" if self.cancelled.is_set() else "done"
            end = types.WorkDoneProgressEnd(message=message)
            self.server.work_done_progress.end(self.token, end)
        except Exception:
            log.warning("ending progress failed", exc_info=True)
        finally:
            self.server.work_done_progress.tokens.pop(self.token, None)
