"""The warmth values of the last jobs (``api.send_warmth``), kept by the worker and handed to
the idle job process next in line, each once, before its job (``job_inbox``).

One value is kept per key (a job's file: a newer save replaces the older value), the
newest ``KEPT`` in all; a value is sent as the job sent it (the worker decodes it only for
its key).
"""

from __future__ import annotations

import itertools
import json

from fxls.worker.protocol import frame, write_all

#: values kept at once
KEPT = 2


class WarmthRelay:
    def __init__(self) -> None:
        #: key -> (serial, body), oldest first
        self._kept: dict[str, tuple[int, bytes]] = {}
        self._serials = itertools.count(1)

    def remember(self, body: bytes) -> None:
        """Keep a job's warmth frame body (``{"status": "warmth", "value": {"key": ...}}``)."""
        try:
            message = json.loads(body)
        except ValueError:
            return
        value = message.get("value") if isinstance(message, dict) else None
        key = value.get("key") if isinstance(value, dict) else None
        if not isinstance(key, str):
            return
        self._kept.pop(key, None)
        self._kept[key] = (next(self._serials), body)
        while len(self._kept) > KEPT:
            del self._kept[next(iter(self._kept))]

    def send_to(self, job_w: int, sent: set[int]) -> None:
        """Write the kept values not in ``sent`` (serials, updated) to an idle process's job
        pipe, newest first; a process that died on the way is the pool's to notice."""
        for serial, body in reversed(list(self._kept.values())):
            if serial in sent:
                continue
            try:
                write_all(job_w, frame(body))
            except OSError:
                return
            sent.add(serial)
