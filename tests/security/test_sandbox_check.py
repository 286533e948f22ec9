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

from tests import probes

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
needs_namespaces = pytest.mark.skipif(not probes.NAMESPACES,
                                      reason="`unshare -Urpn true` fails: no user namespaces")

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
attempt(lambda: open("{home}/written.txt", "w"))
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
REFUSED = ['open("written.txt", "w")', 'open("{home}/written.txt", "w")',
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


@pytest.mark.skipif(not probes.LANDLOCK_ABI and not probes.NAMESPACES,
                    reason="writes are enforced by Landlock or read-only mounts")
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
    source = ATTACKS.format(tag=tag, port=port, home=home)
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
        assert found == sorted(("FX103", *expected_range(source, text.format(port=port,
                                                                             home=home)))
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


CHANGES = '''\
import os
import socket

from torch import nn

OUTSIDE = {outside!r}
SERVICE = {service!r}
SEEN = os.environ.get("FXLS_TEST_SECRET", "none")


def attempt(action):
    try:
        action()
    except OSError:
        pass


attempt(lambda: os.chmod(OUTSIDE, 0o4755))
attempt(lambda: os.utime(OUTSIDE, (0, 0)))
attempt(lambda: os.setxattr(OUTSIDE, "user.fxls", b"1"))
attempt(lambda: os.chown(OUTSIDE, os.getuid(), os.getgid()))
attempt(lambda: os.link(OUTSIDE, OUTSIDE + ".link"))
attempt(lambda: os.symlink(OUTSIDE, OUTSIDE + ".symlink"))
attempt(lambda: socket.socket(socket.AF_UNIX).connect(SERVICE))
attempt(lambda: open(os.path.join(os.path.dirname(OUTSIDE), "seen-" + SEEN), "w"))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
'''
#: each refused expression of CHANGES and the words its FX103 says
REFUSED_CHANGES = {
    "os.chmod(OUTSIDE, 0o4755)": "changing the mode of '{outside}' was refused",
    "os.utime(OUTSIDE, (0, 0))": "changing the times of '{outside}' was refused",
    'os.setxattr(OUTSIDE, "user.fxls", b"1")':
        "changing the extended attributes of '{outside}' was refused",
    "os.chown(OUTSIDE, os.getuid(), os.getgid())": "changing the owner of '{outside}' was refused",
    'os.link(OUTSIDE, OUTSIDE + ".link")': "writing '{outside}' was refused",
    'os.symlink(OUTSIDE, OUTSIDE + ".symlink")': "writing '{outside}.symlink' was refused",
    "socket.socket(socket.AF_UNIX).connect(SERVICE)":
        "connecting to the Unix socket '{service}' was refused",
    'open(os.path.join(os.path.dirname(OUTSIDE), "seen-" + SEEN), "w")':
        "writing '{folder}/seen-none' was refused",
}
CHECK_MODES = [pytest.param("namespaces", marks=needs_namespaces),
               pytest.param("relay", marks=needs_namespaces), "fallback"]


@pytest.mark.parametrize("mode", CHECK_MODES)
def test_fxls_check_reports_each_refused_change(mode: str, tmp_path: Path) -> None:
    """`fxls check` on a file that changes a file outside by every means, connects to a
    service's Unix socket and looks for a secret of the caller's environment: FX103 at each
    line, with its words; nothing outside changed; the secret is nowhere."""
    workspace, outside_dir = tmp_path / "workspace", tmp_path / "outside"
    workspace.mkdir()
    outside_dir.mkdir()
    outside = outside_dir / "data.txt"
    outside.write_text("not yours")
    os.utime(outside, (1_000_000, 1_000_000))
    service_path = tmp_path / "service.sock"
    secret = f"s3cret-{uuid.uuid4().hex}"
    source = CHANGES.format(outside=str(outside), service=str(service_path))
    (workspace / "changes.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(REPO), "FXLS_TEST_SECRET": secret}
    env.pop("FXLS_SANDBOX_NAMESPACES", None)
    env.pop("FXLS_SANDBOX_CLONE", None)
    if mode == "fallback":
        env["FXLS_SANDBOX_NAMESPACES"] = "0"
    if mode == "relay":
        env["FXLS_SANDBOX_CLONE"] = "0"
    before = outside.stat()
    with socket.socket(socket.AF_UNIX) as service:
        service.bind(str(service_path))
        service.listen(1)
        service.settimeout(0)
        done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", "json",
                               "changes.py"], capture_output=True, text=True, timeout=240,
                              cwd=workspace, env=env)
        with pytest.raises(BlockingIOError):
            service.accept()
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-3000:])
    assert secret not in done.stdout and secret not in done.stderr
    (report,) = json.loads(done.stdout)["files"]
    assert [(m["name"], m["status"]) for m in report["modules"]] == [("Net", "traced")]
    found = sorted((d["range"]["start"]["line"], d["range"]["start"]["character"],
                    d["range"]["end"]["line"], d["range"]["end"]["character"], d["message"])
                   for d in report["diagnostics"] if d["code"] == "FX103")
    assert len(found) == len(REFUSED_CHANGES), found
    for (line, start, end_line, end, message), (text, words) in zip(
            found, sorted(REFUSED_CHANGES.items(),
                          key=lambda item: expected_range(source, item[0])), strict=True):
        assert (line, start, end_line, end) == expected_range(source, text), (text, message)
        assert message.startswith(words.format(outside=outside, service=service_path,
                                               folder=outside_dir)), (text, message)
    after = outside.stat()
    assert (after.st_mode, after.st_mtime_ns, after.st_ctime_ns, after.st_nlink) == (
        before.st_mode, before.st_mtime_ns, before.st_ctime_ns, before.st_nlink)
    assert os.listxattr(outside) == []
    assert sorted(p.name for p in outside_dir.iterdir()) == ["data.txt"]
