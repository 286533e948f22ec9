"""No network for analysed code: a factory called with its defaults must not download.

Within a job, Python-level connections and name lookups for internet sockets fail with a
clear error (``[tool.fxls] allow_network = true`` lifts it). This is a guard against
accidental downloads (``pretrained=True``, ``torch.hub``, hub clients), not a sandbox: code
that talks to the OS directly (ctypes, subprocesses) is not stopped by it.
"""

from __future__ import annotations

import socket
from typing import Any

MESSAGE = ("fxls refuses network access while analysing (set `allow_network = true` in "
           "[tool.fxls] to allow it)")
_INTERNET = (socket.AF_INET, socket.AF_INET6)


class NetworkRefused(ConnectionRefusedError):
    pass


def refuse_network() -> None:
    """For the rest of this process (a job's forked child): internet connections and name
    lookups raise ``NetworkRefused``; local (Unix) sockets keep working."""
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in _INTERNET:
            raise NetworkRefused(MESSAGE)
        return original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in _INTERNET:
            raise NetworkRefused(MESSAGE)
        return original_connect_ex(self, address)

    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        raise NetworkRefused(MESSAGE)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo
    socket.create_connection = _refuse  # type: ignore[assignment]


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise NetworkRefused(MESSAGE)
