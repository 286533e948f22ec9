"""The server outlives any byte stream: bad frames are skipped, every request is answered.

The tests drive a real ``fxls serve`` over raw stdio bytes (tests/lsp/raw_lsp.py): one server
takes every bad stream in turn, and a fresh one is started where the start itself is tested.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lsp.raw_lsp import RawServer, frame, notification, request

HOVER = "textDocument/hover"


def _hover_params(uri: str, line: object = 0, character: object = 0) -> dict[str, object]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


@pytest.fixture
def raw(tmp_path: Path) -> Iterator[RawServer]:
    server = RawServer(tmp_path / "server.log", cwd=tmp_path)
    yield server
    server.close()


@pytest.fixture(scope="module")
def initialized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    """One initialized server for the module's tests that each end with a request answered
    normally (the stream in step again): each is the next stream it outlives."""
    root = tmp_path_factory.mktemp("raw")
    server = RawServer(root / "server.log", cwd=root)
    server.initialize(root)
    yield server
    server.close()


@pytest.fixture
def ready(initialized: RawServer) -> RawServer:
    """The module's initialized server, the earlier tests' messages forgotten."""
    initialized.forget_messages()
    return initialized


def _answered_normally(server: RawServer, msg_id: object) -> None:
    """A valid request sent now gets its result: the server reads frames again."""
    server.send(frame(request(msg_id, "shutdown" if msg_id == "last" else HOVER,
                              _hover_params("file:///nowhere.py"))))
    response = server.response(msg_id, 20)
    assert response is not None and "result" in response, server.stderr()


def test_requests_before_initialize_get_server_not_initialized(raw: RawServer, tmp_path: Path):
    raw.send(frame(request(1, HOVER, _hover_params("file:///a.py"))))
    raw.send(frame(request(2, "textDocument/codeLens", {"textDocument": {"uri": "file:///a.py"}})))
    assert raw.response(1)["error"]["code"] == -32002
    assert raw.response(2)["error"]["code"] == -32002
    raw.initialize(tmp_path)
    _answered_normally(raw, 3)


@pytest.mark.parametrize(
    ("params", "why"),
    [
        (_hover_params("file:///a.py", line=-1), "negative line"),
        (_hover_params("file:///a.py", line=2**31), "line beyond uinteger"),
        ({"textDocument": {"uri": "file:///a.py"}}, "missing position"),
        ([1, 2], "params as a list"),
        (_hover_params("file:///a.py", character=float("nan")), "NaN"),
        ("text", "params as a string"),
    ],
)
def test_invalid_params_get_invalid_params(ready: RawServer, params: object, why: str):
    ready.send(frame(request(7, HOVER, params)))
    response = ready.response(7)
    assert response is not None, why
    assert response["error"]["code"] == -32602, (why, response)
    _answered_normally(ready, 8)


def test_unknown_method_gets_method_not_found(ready: RawServer):
    ready.send(frame(request(5, "fxls/noSuchThing", {})))
    assert ready.response(5)["error"]["code"] == -32601
    ready.send(frame(notification("fxls/noSuchNotification", {})))
    _answered_normally(ready, 6)


def test_not_json_rpc_gets_invalid_request_and_not_json_a_parse_error(ready: RawServer):
    ready.send(frame({"id": 3, "method": HOVER}))
    ready.send(frame([1, 2, 3]))
    ready.send(frame(None))  # a JSON null body is a bad message, not the end of the stream
    ready.send(frame({"jsonrpc": "2.0", "id": 4, "method": 12}))
    ready.send(frame(b'{"jsonrpc": "2.0", "id": 9, '))
    _answered_normally(ready, 10)
    assert ready.response(3)["error"]["code"] == -32600
    assert ready.response(4)["error"]["code"] == -32600
    errors = [m["error"]["code"] for m in ready.messages if m.get("id") is None and "error" in m]
    assert sorted(errors) == [-32700, -32600, -32600]


@pytest.mark.parametrize("length", [100_000_000_000, 2**63, 10**40])
def test_a_huge_content_length_is_logged_and_skipped(ready: RawServer, length: int):
    ready.send(f"Content-Length: {length}\r\n\r\n".encode() + b'{"jsonrpc": "2.0"}')
    _answered_normally(ready, 2)
    assert ready.alive()
    assert f"Content-Length {length}" in ready.stderr()


@pytest.mark.parametrize(
    "header",
    [
        "content-length: {n}\r\n\r\n",
        "CONTENT-LENGTH: {n}\r\n\r\n",
        "Content-Length:{n}\r\n\r\n",
        "Content-Length: {n}\n\n",
        "Content-Length: {n}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n",
        "Content-Length:   {n}  \r\n\r\n",
    ],
)
def test_header_variants_are_understood(ready: RawServer, header: str):
    ready.send(frame(request(11, HOVER, _hover_params("file:///a.py")), header=header))
    response = ready.response(11)
    assert response is not None and "result" in response


@pytest.mark.parametrize("delta", [-2, -1, 1, 2])
def test_a_length_off_by_a_little_recovers_the_message(ready: RawServer, delta: int):
    body = frame(request(21, HOVER, _hover_params("file:///a.py"))).split(b"\r\n\r\n", 1)[1]
    ready.send(f"Content-Length: {len(body) + delta}\r\n\r\n".encode() + body)
    _answered_normally(ready, 22)
    assert ready.response(21, 5) is not None


@pytest.mark.parametrize(
    "garbage",
    [
        b"Content-Length: abc\r\n\r\n{}",
        b"Content-Length: -5\r\n\r\n",
        b"Content-Lenght: 10\r\n\r\n0123456789",
        b"\x00\xff\xfe garbage without any header \r\n\r\n",
        b"Content-Length: 5\r\n\r\n\xff\xfe\x00\x01\x02",
        b"Content-Length: 30\r\nX\r\n\r\n",
        b"x" * 100_000,
    ],
)
def test_after_a_bad_frame_the_next_valid_header_is_read(ready: RawServer, garbage: bytes):
    ready.send(garbage)
    _answered_normally(ready, 31)
    assert ready.alive()


def _children(pid: int) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(status.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_shutdown_while_the_worker_starts_is_answered_and_ends_the_worker(raw: RawServer,
                                                                           tmp_path: Path):
    """The worker is started at ``initialize`` and imports torch for seconds: a shutdown
    then stops that start (no wait for it) and leaves no worker behind."""
    raw.initialize(tmp_path)
    server = raw.process.pid
    workers = set()
    for _ in range(200):
        workers = _children(server)
        if workers:
            break
        time.sleep(0.01)
    assert workers, "the server started no worker at initialize"
    raw.send(frame(request("bye", "shutdown")))
    assert raw.response("bye", 20) == {"jsonrpc": "2.0", "id": "bye", "result": None}
    raw.send(frame(notification("exit")))
    assert raw.process.wait(20) == 0
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()
                and "Z" not in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]]
