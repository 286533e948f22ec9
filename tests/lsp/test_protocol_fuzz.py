"""Protocol fuzz: thousands of generated messages against one real ``fxls serve`` process.

A seeded generator (reproducible: ``FXLS_FUZZ_SEED``, ``FXLS_FUZZ_CASES``) mixes malformed
frames, requests with wrong param types, out-of-range positions, unknown URIs and document
notifications with damaged sources. The server must not die, must answer every well-framed
request, and every diagnostic it publishes must lie inside the document version it names.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.lsp.raw_lsp import RawServer, frame, notification, request

ANALYSIS_DONE = "fxls/analysisDone"
SEED = int(os.environ.get("FXLS_FUZZ_SEED", "20261123"))
CASES = int(os.environ.get("FXLS_FUZZ_CASES", "2400"))

MODEL = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:  # 门控 😀
            h = h.relu()
        return h
"""

REQUEST_METHODS = [
    "textDocument/hover", "textDocument/inlayHint", "textDocument/codeLens",
    "textDocument/codeAction", "workspace/executeCommand", "textDocument/completion",
    "textDocument/definition", "fxls/unknown",
]

ODD_VALUES: list[Any] = [
    None, True, 0, -1, 2**31, 2**31 - 1, 2**53, -(2**63), 1.5, float("nan"), float("inf"),
    "", "0", "x" * 300, [], [1, 2], {}, {"line": 0}, "file:///nowhere.py", "\udcff".encode(
        "utf-8", "surrogatepass").decode("latin-1"),
]


def _line_lengths_utf16(text: str) -> list[int]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return [len(line.encode("utf-16-le")) // 2 for line in lines]


def _inside(diagnostic: dict[str, Any], lengths: list[int]) -> bool:
    for key in ("start", "end"):
        position = diagnostic["range"][key]
        line, character = position["line"], position["character"]
        if not (0 <= line < len(lengths) and 0 <= character <= lengths[line]):
            return False
    start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
    return (start["line"], start["character"]) <= (end["line"], end["character"])


class Fuzzer:
    def __init__(self, rng: random.Random, root: Path) -> None:
        self.rng = rng
        self.root = root
        self.uris = [(root / f"doc{i}.py").as_uri() for i in range(3)]
        #: each open document's current version (versions keep rising across reopening)
        self.versions: dict[str, int] = {}
        self._last_version: Counter[str] = Counter()
        #: the version an open or save of each open document asked to analyse
        self.analysed: dict[str, int] = {}
        self.texts: dict[tuple[str, int], str] = {}
        self.request_ids: list[int] = []
        self.kinds: Counter[str] = Counter()
        self._next_id = 1000

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def case(self) -> bytes:
        roll = self.rng.random()
        if roll < 0.25:
            self.kinds["malformed frame"] += 1
            return self.malformed_frame()
        if roll < 0.60:
            self.kinds["wrong param types"] += 1
            return self.odd_request()
        if roll < 0.90:
            self.kinds["out-of-range position / unknown URI"] += 1
            return self.position_request()
        self.kinds["document notification"] += 1
        return self.document_notification()

    # -- generators ----------------------------------------------------------------------

    def malformed_frame(self) -> bytes:
        rng = self.rng
        body = json.dumps(request(self.new_id(), "textDocument/hover", {
            "textDocument": {"uri": rng.choice(self.uris)},
            "position": {"line": 0, "character": 0}})).encode()
        choice = rng.randrange(9)
        if choice == 0:
            return f"Content-Length: {rng.choice([10**11, 2**63, 10**30])}\r\n\r\n".encode()
        if choice == 1:
            return rng.randbytes(rng.randrange(1, 400))
        if choice == 2:
            length = len(body) + rng.choice([-3, -1, 1, 3])
            return f"Content-Length: {length}\r\n\r\n".encode() + body
        if choice == 3:
            return b"Content-Length: " + rng.choice([b"abc", b"-4", b"", b"1e3"]) + b"\r\n\r\n"
        if choice == 4:
            cut = rng.randrange(1, len(body))
            return f"Content-Length: {cut}\r\n\r\n".encode() + body[:cut]
        if choice == 5:
            return f"Content-Length: {len(body)}\r\nBad Header Line\r\n\r\n".encode() + body
        if choice == 6:
            junk = rng.randbytes(len(body))
            return f"Content-Length: {len(junk)}\r\n\r\n".encode() + junk
        if choice == 7:
            return frame(rng.choice([[1, 2], 17, "str", None, {"no": "jsonrpc"}]))
        return b"\r\n" * rng.randrange(1, 5)

    def odd_request(self) -> bytes:
        rng = self.rng
        msg_id = self.new_id()
        method = rng.choice(REQUEST_METHODS)
        params: Any = {
            "textDocument": {"uri": rng.choice(self.uris)},
            "position": {"line": 1, "character": 1},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
            "context": {"diagnostics": []},
            "command": "fxls.showGraph",
            "arguments": [rng.choice(self.uris), "Gate"],
        }
        for _ in range(rng.randrange(1, 4)):
            params = self._mutate(params)
        self.request_ids.append(msg_id)
        header = rng.choice(["Content-Length: {n}\r\n\r\n", "content-length:{n}\n\n"])
        return frame(request(msg_id, method, params), header=header)

    def _mutate(self, value: Any) -> Any:
        rng = self.rng
        if isinstance(value, dict) and value and rng.random() < 0.75:
            key = rng.choice(list(value))
            copy = dict(value)
            if rng.random() < 0.2:
                del copy[key]
            else:
                copy[key] = self._mutate(copy[key])
            return copy
        return rng.choice(ODD_VALUES)

    def position_request(self) -> bytes:
        rng = self.rng
        msg_id = self.new_id()
        uri = rng.choice([*self.uris, (self.root / "never_opened.py").as_uri(),
                          "file:///", "untitled:Untitled-1", "not a uri", ""])
        line = rng.choice([0, 5, 11, 14, 15, 500, 2**31 - 1, rng.randrange(0, 40)])
        character = rng.choice([0, 11, 22, 80, 2**31 - 1, rng.randrange(0, 100)])
        method = rng.choice(REQUEST_METHODS[:4])
        params: dict[str, Any] = {"textDocument": {"uri": uri}}
        if method == "textDocument/hover":
            params["position"] = {"line": line, "character": character}
        else:
            params["range"] = {"start": {"line": line, "character": character},
                               "end": {"line": line + rng.randrange(0, 3), "character": 0}}
            params["context"] = {"diagnostics": []}
        if method == "textDocument/codeLens":
            params = {"textDocument": {"uri": uri}}
        self.request_ids.append(msg_id)
        return frame(request(msg_id, method, params))

    def document_notification(self) -> bytes:
        rng = self.rng
        uri = rng.choice(self.uris)
        self._last_version[uri] += 1
        version = self._last_version[uri]
        text = self._damaged(MODEL)
        kind = rng.choice(["open", "change", "save", "close"])
        if kind == "close" or (kind != "open" and uri not in self.versions):
            self.versions.pop(uri, None)
            self.analysed.pop(uri, None)
            return frame(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
        self.versions[uri] = version
        if kind in ("open", "save"):
            self.analysed[uri] = version
        self.texts[(uri, version)] = text
        if kind == "open":
            return frame(notification("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": version, "text": text}}))
        change = frame(notification("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}]}))
        if kind == "change":
            return change
        return change + frame(notification("textDocument/didSave", {"textDocument": {"uri": uri}}))

    def _damaged(self, text: str) -> str:
        rng = self.rng
        for _ in range(rng.randrange(0, 4)):
            where = rng.randrange(0, len(text) + 1)
            piece = rng.choice(["\r", "\r\n", "\x0c", "\u2028", "😀", "(", "))", "\t", "if x:",
                                "é" * 3, "\x00", "    ", "def", ":"])
            if rng.random() < 0.3:
                text = text[:where] + text[where + rng.randrange(1, 6):]
            else:
                text = text[:where] + piece + text[where:]
        return text


def _wait_analysed(server: RawServer, fuzzer: Fuzzer) -> None:
    """Until the newest version of each open document is analysed to the end."""
    server.send(b"\r\n\r\n")  # completes a frame left waiting for a few more bytes
    for uri, version in fuzzer.analysed.items():
        done = server.wait_for(lambda m, u=uri, v=version: m.get("method") == ANALYSIS_DONE
                               and m["params"]["uri"] == u and m["params"]["version"] >= v, 120)
        assert done is not None, (uri, version, server.stderr())


def test_protocol_fuzz_never_kills_the_server(tmp_path: Path):
    server = RawServer(tmp_path / "server.log", cwd=tmp_path)
    try:
        server.initialize(tmp_path, {"fxls": {"trace": {"timeout": 10}}})
        fuzzer = Fuzzer(random.Random(SEED), tmp_path)
        started = time.monotonic()
        for number in range(1, CASES + 1):
            server.send(fuzzer.case())
            assert server.alive(), server.stderr()
            if number % 150 == 0:  # let some analyses finish, so their diagnostics are checked
                _wait_analysed(server, fuzzer)
        # a frame cut short waits for the rest of its body: end every stream cleanly
        server.send(b"\r\n\r\n" + frame(request("flush", "textDocument/hover", {
            "textDocument": {"uri": "file:///x.py"}, "position": {"line": 0, "character": 0}})))
        assert server.response("flush", 120) is not None, server.stderr()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if set(fuzzer.request_ids) <= set(server.responses()):
                break
            time.sleep(0.2)
        _wait_analysed(server, fuzzer)
        answered = server.responses()
        unanswered = [i for i in fuzzer.request_ids if i not in answered]
        assert not unanswered, (len(unanswered), server.stderr())
        assert server.alive()

        outside = []
        checked = 0
        for message in server.notifications("textDocument/publishDiagnostics"):
            params = message["params"]
            text = fuzzer.texts.get((params["uri"], params.get("version")))
            if text is None:
                continue
            lengths = _line_lengths_utf16(text)
            checked += len(params["diagnostics"])
            outside += [d for d in params["diagnostics"] if not _inside(d, lengths)]
        assert not outside, outside[:3]
        assert checked > 0, "no diagnostic was published for a document the fuzzer knows"
        log = (tmp_path / "server.log").read_text(errors="replace")
        assert "Traceback" not in log, log[log.index("Traceback") - 200:][:3000]
        print(f"\nprotocol fuzz: seed {SEED}, {CASES} cases {dict(fuzzer.kinds)}, "
              f"{len(fuzzer.request_ids)} requests all answered, {checked} diagnostics inside "
              f"their documents, 0 deaths, {time.monotonic() - started:.0f} s")
    finally:
        assert server.close() is not None
