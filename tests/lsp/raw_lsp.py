"""A raw byte-level LSP client for a real ``fxls serve`` process: sends any bytes (valid or
not) and collects every frame the server writes, for the protocol and fuzz tests."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def frame(message: Any, *, header: str = "Content-Length: {n}\r\n\r\n") -> bytes:
    body = json.dumps(message).encode("utf-8") if not isinstance(message, bytes) else message
    return header.format(n=len(body)).encode("ascii") + body


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


class RawServer:
    """``python -m fxls serve`` with stdin/stdout as raw pipes; stderr goes to a file."""

    def __init__(self, log_path: Path, cwd: Path | None = None) -> None:
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 (closed by close())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fxls", "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=cwd,
        )
        self.messages: list[dict[str, Any]] = []
        self._condition = threading.Condition()
        self._reader = threading.Thread(target=self._read_frames, daemon=True)
        self._reader.start()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool],
                 timeout: float = 30.0) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (not self.alive() and not self._reader.is_alive()):
                    return None
                self._condition.wait(min(remaining, 0.5))

    def response(self, msg_id: Any, timeout: float = 30.0) -> dict[str, Any] | None:
        return self.wait_for(
            lambda m: m.get("id") == msg_id and ("result" in m or "error" in m), timeout)

    def responses(self) -> dict[Any, dict[str, Any]]:
        with self._condition:
            return {m["id"]: m for m in self.messages
                    if "id" in m and ("result" in m or "error" in m)}

    def notifications(self, method: str) -> list[dict[str, Any]]:
        with self._condition:
            return [m for m in self.messages if m.get("method") == method and "id" not in m]

    def forget_messages(self) -> None:
        """Drop the messages read so far: the next test on a shared server sees its own."""
        with self._condition:
            self.messages.clear()

    def initialize(self, root: Path, options: dict[str, Any] | None = None) -> None:
        self.send(frame(request("init", "initialize", {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": options or {},
        })))
        assert self.response("init", 60) is not None, self.stderr()
        self.send(frame(notification("initialized", {})))

    def close(self) -> int | None:
        if self.alive():
            try:
                self.send(frame(request("bye", "shutdown")))
                self.response("bye", 20)
                self.send(frame(notification("exit")))
            except (BrokenPipeError, OSError):
                pass
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode

    def stderr(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def _read_frames(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None
            body = stream.read(length)
            with self._condition:
                self.messages.append(json.loads(body))
                self._condition.notify_all()
