"""The server never blocks on a workspace file: a FIFO, a link to `/dev/zero` and a
symbolic-link loop named `*.py` (a hostile repository can commit the links) neither hang the
project check nor the server's exit, nor grow its memory; the good files are still checked
and documents opened afterwards analysed (real `fxls serve` over raw stdio)."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.raw_lsp import RawServer, frame, notification, request

GOOD = ("import math\nimport torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
        "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n"
        "        return -x\n")
#: the server's (and its worker's) address space: the old reader took all of /dev/zero
ADDRESS_LIMIT = 3 << 30
#: the server's own peak memory stays far below what reading a device whole would take
SERVER_PEAK_LIMIT_KB = 400 << 10
OPTIONS = {"fxls": {"trace": {"timeout": 20}}}


def _start(tmp_path: Path) -> RawServer:
    server = RawServer(tmp_path / "server.log", cwd=tmp_path)
    resource.prlimit(server.process.pid, resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
    return server


def _shut_down(server: RawServer) -> None:
    """shutdown is answered and exit ends the process, within seconds."""
    server.send(frame(request("bye", "shutdown")))
    assert server.response("bye", 20) is not None, server.stderr()
    server.send(frame(notification("exit")))
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"fxls serve did not exit: {server.stderr()}") from None
    finally:
        server.close()


def _diagnostics(server: RawServer, path: Path, timeout: float = 120) -> list[dict[str, Any]]:
    uri = path.as_uri()
    message = server.wait_for(
        lambda m: m.get("method") == "textDocument/publishDiagnostics"
        and m["params"]["uri"] == uri and bool(m["params"]["diagnostics"]), timeout)
    assert message is not None, server.stderr()
    return message["params"]["diagnostics"]


def _peak_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:"))
               .split()[1])


def test_the_server_exits_with_a_fifo_in_its_folder(tmp_path: Path):
    """Opening the folder reads its imports (to learn their libraries): a FIFO there held
    that reader for ever, and the server's exit waited for it."""
    (tmp_path / "a_good.py").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / "b.py")
    server = _start(tmp_path)
    server.initialize(tmp_path, OPTIONS)
    time.sleep(1.5)  # the folder's imports are read now
    _shut_down(server)


def test_the_project_check_answers_with_odd_files(tmp_path: Path):
    (tmp_path / "a_good.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "big.py").write_bytes(b"x = 1\n" + b"#" * (9 << 20) + b"\n")
    os.mkfifo(tmp_path / "b.py")
    (tmp_path / "c.py").symlink_to("/dev/zero")
    (tmp_path / "l1.py").symlink_to("l2.py")
    (tmp_path / "l2.py").symlink_to("l1.py")
    server = _start(tmp_path)
    server.initialize(tmp_path, OPTIONS)
    server.send(frame(request("check", "workspace/executeCommand",
                              {"command": "fxls.checkProject"})))
    answer = server.response("check", 120)
    assert answer is not None and "result" in answer, (answer, server.stderr())
    result = answer["result"]
    assert (result["files"], result["checked"]) == (2, 2)
    assert sorted((Path(s["path"]).name, s["reason"]) for s in result["skipped"]) == [
        ("b.py", "a FIFO, not a regular file"),
        ("c.py", "a character device (/dev/zero), not a regular file"),
        ("l1.py", "a symbolic link loop"),
        ("l2.py", "a symbolic link loop"),
    ]
    assert [(d["code"], d["range"]["start"]["line"]) for d in
            _diagnostics(server, tmp_path / "a_good.py")] == [("FX001", 7)]
    (big,) = _diagnostics(server, tmp_path / "big.py")
    assert (big["code"], big["message"]) == (
        "FX100", "the file is 9.0 MB, over the 8 MB fxls reads: it was not checked")
    # a document opened afterwards is analysed
    opened = tmp_path / "z_opened.py"
    server.send(frame(notification("textDocument/didOpen", {"textDocument": {
        "uri": opened.as_uri(), "languageId": "python", "version": 1, "text": GOOD}})))
    assert [d["code"] for d in _diagnostics(server, opened)] == ["FX001"]
    assert _peak_kb(server.process.pid) < SERVER_PEAK_LIMIT_KB
    _shut_down(server)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _loop(path: Path) -> None:
    path.symlink_to(path.with_name("l2.py"))
    path.with_name("l2.py").symlink_to(path)


@pytest.mark.parametrize("make", [_fifo, _dev_zero, _loop])
def test_one_odd_file_loses_nothing(tmp_path: Path, make: Callable[[Path], None]):
    """Each alone: the FIFO blocked the server's loop (no answer, no shutdown), /dev/zero
    grew it to gigabytes before a MemoryError answer, the loop failed the whole check."""
    (tmp_path / "a_good.py").write_text(GOOD, encoding="utf-8")
    make(tmp_path / "c.py")
    server = _start(tmp_path)
    server.initialize(tmp_path, OPTIONS)
    server.send(frame(request("check", "workspace/executeCommand",
                              {"command": "fxls.checkProject"})))
    answer = server.response("check", 120)
    assert answer is not None and "result" in answer, (answer, server.stderr())
    assert (answer["result"]["files"], answer["result"]["checked"]) == (1, 1)
    assert [d["code"] for d in _diagnostics(server, tmp_path / "a_good.py")] == ["FX001"]
    assert _peak_kb(server.process.pid) < SERVER_PEAK_LIMIT_KB
    _shut_down(server)


def test_a_report_pointing_into_odd_files_is_published(tmp_path: Path):
    """A report (the analysed code can forge it) whose spans point into a FIFO, /dev/zero
    and a link loop: placing them read those files on the server's loop (blocked, grew, or
    raised); now each is shown at line 1 of its file (the link to /dev/zero is a file
    outside the workspace: not shown) and the server goes on."""
    from tests.files.test_odd_files_cli import FORGED_SPANS

    os.mkfifo(tmp_path / "b.py")
    (tmp_path / "c.py").symlink_to("/dev/zero")
    _loop(tmp_path / "l1.py")
    forged = tmp_path / "forged.py"
    forged.write_text(FORGED_SPANS, encoding="utf-8")
    server = _start(tmp_path)
    server.initialize(tmp_path, OPTIONS)
    server.send(frame(notification("textDocument/didOpen", {"textDocument": {
        "uri": forged.as_uri(), "languageId": "python", "version": 1,
        "text": FORGED_SPANS}})))
    for name in ("b.py", "l1.py"):
        (shown,) = _diagnostics(server, tmp_path / name)
        assert (shown["message"], shown["range"]["start"]) == (
            f"in {name}", {"line": 0, "character": 0})
    assert not [m for m in server.notifications("textDocument/publishDiagnostics")
                if m["params"]["uri"] in ((tmp_path / "c.py").as_uri(), "file:///dev/zero")]
    opened = tmp_path / "z_opened.py"
    server.send(frame(notification("textDocument/didOpen", {"textDocument": {
        "uri": opened.as_uri(), "languageId": "python", "version": 1, "text": GOOD}})))
    assert [d["code"] for d in _diagnostics(server, opened)] == ["FX001"]
    assert _peak_kb(server.process.pid) < SERVER_PEAK_LIMIT_KB
    _shut_down(server)
