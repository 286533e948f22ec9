"""End to end: `fxls check` on a model file that attacks its sandbox, from a workspace that
holds a ``numpy.py``. The check must finish normally, report each refused write and connection
as FX103 at the line that tried, and leave no file and no process behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fxls.worker import sandbox

REPO = Path(__file__).resolve().parents[2]
SUPPORT = sandbox.support()
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")

ATTACKS = '''\
import os
import signal
import socket
import subprocess
import sys

import torch
from torch import nn

TAG = "{tag}"


def attempt(action):
    try:
        action()
    except OSError:
        pass


attempt(lambda: open("written.txt", "w"))
attempt(lambda: open(os.path.expanduser("~/written.txt"), "w"))
attempt(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
subprocess.run(["sh", "-c", "echo > shell-written.txt"])
SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)", TAG]
subprocess.Popen(SLEEPER, start_new_session=True)
attempt(lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL))
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        command = open(f"/proc/{{pid}}/cmdline", "rb").read()
    except OSError:
        continue
    if b"\\0fxls\\0check\\0" in command:
        attempt(lambda: os.kill(pid, signal.SIGKILL))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
'''
#: the refused expressions, each on its own line of ATTACKS
REFUSED = ['open("written.txt", "w")', 'open(os.path.expanduser("~/written.txt"), "w")',
           'socket.create_connection(("127.0.0.1", {port}), timeout=2)']


def tagged_processes(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (entry.name.isdigit() and tag.encode() in (entry / "cmdline").read_bytes()
                    and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def expected_range(source: str, text: str) -> tuple[int, int, int, int]:
    for number, line in enumerate(source.splitlines()):
        if text in line and not line.lstrip().startswith("REFUSED"):
            start = line.index(text)
            return number, start, number, start + len(text)
    raise AssertionError(text)


@pytest.mark.skipif(not SUPPORT.landlock_abi, reason="writes are enforced by Landlock")
def test_fxls_check_on_a_file_that_attacks_its_sandbox(tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    marker = tmp_path / "numpy-ran"
    (workspace / "numpy.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    tag = f"fxls-escape-{uuid.uuid4().hex}"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    source = ATTACKS.format(tag=tag, port=port)
    (workspace / "attacks.py").write_text(source)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    try:
        done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", "json",
                               "attacks.py"], capture_output=True, text=True, timeout=240,
                              cwd=workspace, env=env)
        assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])
        (report,) = json.loads(done.stdout)["files"]
        assert [(m["name"], m["status"]) for m in report["modules"]] == [("Net", "traced")]
        found = sorted((d["code"], *d["range"]["start"].values(), *d["range"]["end"].values())
                       for d in report["diagnostics"] if d["code"] == "FX103")
        assert found == sorted(("FX103", *expected_range(source, text.format(port=port)))
                               for text in REFUSED)
        assert sorted(p.name for p in workspace.iterdir()) == ["attacks.py", "numpy.py"]
        assert list(home.iterdir()) == []
        assert not marker.exists()  # the workspace's numpy.py never ran outside a job
        with pytest.raises(TimeoutError):
            server.accept()
        deadline = time.monotonic() + 5
        while tagged_processes(tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tagged_processes(tag) == []
    finally:
        server.close()
        for pid in tagged_processes(tag):
            os.kill(pid, 9)
