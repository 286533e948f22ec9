"""``fxls serve``: the language server, its handlers routed (``routes``), on stdio or TCP.

Handlers are thin: they convert positions once (``lsp_convert.RangeConverter``), look
things up in a document's snapshot (``session``, ``report_lookup``), and render (``hover``,
``inlay``). Tracing happens only on open/save (and, opt-in, after a pause in typing), never
on hover.
"""

from __future__ import annotations

import logging

from fxls.server import one_line_logs
from fxls.server.jsonrpc import serve_stdio
from fxls.server.language_server import FxlsServer
from fxls.server.routes import routed


def build_server() -> FxlsServer:
    return routed(FxlsServer())


def serve(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> None:
    logging.basicConfig(level=logging.WARNING)
    one_line_logs.install()  # a malformed message is one line on stderr, not a traceback
    for name in ("pygls", "pygls.protocol", "pygls.server"):
        logging.getLogger(name).setLevel(logging.WARNING)
    server = build_server()
    if tcp:
        server.start_tcp(host, port)
    else:
        serve_stdio(server)
