"""JSON-RPC on top of pygls that answers every request, whatever the client sends.

pygls drops a request whose params do not fit the method's types (no answer at all), runs
requests that arrive before ``initialize``, and silently drops requests after ``shutdown``.
:class:`FxlsProtocol` checks each decoded message first and answers:

- ``-32700`` a frame whose body is not JSON (id null),
- ``-32600`` not a JSON-RPC 2.0 object, a second ``initialize``, a request after ``shutdown``,
- ``-32002`` a request before ``initialize``,
- ``-32602`` params that do not fit the method,
- ``-32601`` an unknown method (pygls itself).

:func:`serve_stdio` runs the server on stdin/stdout with :class:`framing.FrameReader`.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.server import JsonRPCServer

from fxls.server.framing import BadFrame, FrameReader

log = logging.getLogger(__name__)

#: bytes asked of stdin per read (a read returns what is there, up to this)
READ_CHUNK = 64 * 1024


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class FxlsProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initialize_received = False

    def receive(self, data: Any) -> None:
        """Handle one decoded message (or a frame that was not JSON)."""
        if isinstance(data, BadFrame):
            self._send_error(None, JsonRpcParseError(f"Parse error: {data.reason}"))
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            msg_id = data.get("id") if isinstance(data, dict) else None
            self._send_error(msg_id if _valid_id(msg_id) else None,
                             JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            return
        method = data.get("method")
        if "method" in data and not isinstance(method, str):
            msg_id = data.get("id")
            if "id" in data:
                self._send_error(msg_id if _valid_id(msg_id) else None,
                                 JsonRpcInvalidRequest("method must be a string"))
            return
        if "id" in data and not _valid_id(data["id"]):
            if method is not None:
                self._send_error(None, JsonRpcInvalidRequest("id must be a string or integer"))
            return
        is_request = method is not None and "id" in data
        if is_request and self._refused(data["id"], method):
            return
        notification = method is not None and not is_request
        if notification and not self.initialize_received and method != types.EXIT:
            log.warning("dropped the notification %r sent before initialize", method)
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as error:
            if is_request:
                self._send_error(data["id"], JsonRpcInvalidParams(
                    f"invalid params for {method}: {_cause(error)}"))
            else:
                log.warning("dropped a message with invalid params (%s)", method)
            return
        if method == types.INITIALIZE:
            self.initialize_received = True
        self.handle_message(message)

    def _refused(self, msg_id: Any, method: str) -> bool:
        """Answer a request that must not run now with an error; True if it was refused."""
        error: JsonRpcException | None = None
        if method == types.INITIALIZE and self.initialize_received:
            error = JsonRpcInvalidRequest("initialize may be sent only once")
        elif method != types.INITIALIZE and not self.initialize_received:
            error = JsonRpcServerNotInitialized(f"{method} before initialize")
        elif self._shutdown and method != types.EXIT:
            error = JsonRpcInvalidRequest(f"{method} after shutdown")
        if error is None:
            return False
        self._send_error(msg_id, error)
        return True

    def _send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        response = {"jsonrpc": "2.0", "id": msg_id,
                    "error": {"code": error.code, "message": error.message}}
        self._send_data(response)


def _cause(error: BaseException) -> str:
    cause = error.__cause__
    text = str(cause if cause is not None else error).splitlines()
    return text[0] if text else type(error).__name__


async def _serve(server: JsonRPCServer, stdin: BinaryIO, stop: threading.Event) -> None:
    loop = asyncio.get_running_loop()
    read1 = getattr(stdin, "read1", stdin.read)

    def read_chunk() -> asyncio.Future[bytes]:
        return loop.run_in_executor(server.thread_pool, read1, READ_CHUNK)

    reader = FrameReader(read_chunk)
    protocol = server.protocol
    assert isinstance(protocol, FxlsProtocol)
    while not stop.is_set():
        try:
            message = await reader.next_message()
        except EOFError:
            break
        try:
            protocol.receive(message)
        except Exception:
            log.exception("handling a message failed")


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None,
                stdout: BinaryIO | None = None) -> None:
    """Run ``server`` (built with :class:`FxlsProtocol`) until stdin closes or ``exit``."""
    stop = server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, stdin or sys.stdin.buffer, stop))
    except BrokenPipeError:
        log.error("the client closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
