"""Jobs that attack their sandbox, run by tests/worker/test_sandbox*.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_SLEEPER = "import time; time.sleep(120)"


def whoami(params: dict[str, Any]) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile("w", delete=False) as handle:
        handle.write("private")
    return {"pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid(),
            "tmp": handle.name, "tmp_written": Path(handle.name).read_text(),
            "processes": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}


def escape(params: dict[str, Any]) -> str:
    """Start processes that outlive their parent in three ways, each tagged in its argv."""
    tag = params["tag"]
    sleeper = [sys.executable, "-c", _SLEEPER, tag]
    subprocess.Popen(sleeper, start_new_session=True)
    if os.fork() == 0:  # a double-fork daemon
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, sleeper)
        os._exit(0)
    shell = subprocess.Popen(
        ["sh", "-c", f"'{sys.executable}' -c '{_SLEEPER}' {tag} & echo started; wait"],
        stdout=subprocess.PIPE)
    assert shell.stdout is not None
    shell.stdout.readline()  # the sleeper was forked
    shell.kill()  # Popen, then kill its parent: the sleeper is orphaned
    shell.wait()
    return "started"


def escape_and_wait(params: dict[str, Any]) -> None:
    escape(params)
    while True:
        time.sleep(1)


def spin(params: dict[str, Any]) -> None:
    while True:
        pass


def kill_callers(params: dict[str, Any]) -> dict[str, str]:
    """Try to kill the worker's process group, the worker and the worker's parent (those
    named in ``params["attacks"]``, by default all three)."""
    outcome = {}
    attempts = {
        "worker group": lambda: os.killpg(os.getpgid(os.getppid()), signal.SIGKILL),
        "worker": lambda: os.kill(params["worker"], signal.SIGKILL),
        "server": lambda: os.kill(params["server"], signal.SIGKILL),
    }
    for name, attempt in attempts.items():
        if name not in params.get("attacks", attempts):
            continue
        try:
            attempt()
            outcome[name] = "sent"
        except OSError as exc:
            outcome[name] = type(exc).__name__
    return outcome


def write_outside(params: dict[str, Any]) -> dict[str, str]:
    """Write to each path in ``params["paths"]`` from Python, then from a subprocess."""
    outcome = {}
    for path in params["paths"]:
        try:
            Path(path).write_text("written by a job")
            outcome[path] = "python"
        except OSError as exc:
            outcome[path] = type(exc).__name__
        done = subprocess.run(["sh", "-c", f"echo shell > '{path}.sh'"], capture_output=True)
        outcome[path + ".sh"] = "shell" if done.returncode == 0 else "refused"
    return outcome


def connect(params: dict[str, Any]) -> dict[str, str]:
    """Connect to ``params["port"]`` on the loopback from Python, then from a subprocess."""
    outcome = {}
    try:
        socket.create_connection(("127.0.0.1", params["port"]), timeout=2).close()
        outcome["python"] = "connected"
    except OSError as exc:
        outcome["python"] = type(exc).__name__
    code = (f"import socket; socket.socket().connect(('127.0.0.1', {params['port']}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=10)
    outcome["subprocess"] = "connected" if done.returncode == 0 else "refused"
    return outcome


def make_dirs(params: dict[str, Any]) -> dict[str, str]:
    """``os.makedirs(path, exist_ok=True)`` for each path (the usual cache-folder idiom)."""
    outcome = {}
    for path in params["paths"]:
        try:
            os.makedirs(path, exist_ok=True)
            outcome[path] = "ok"
        except OSError as exc:
            outcome[path] = type(exc).__name__
    return outcome


def unix_connect(params: dict[str, Any]) -> dict[str, Any]:
    """Connect to the Unix socket ``params["path"]``; list its folder."""
    outcome: dict[str, Any] = {"listing": sorted(os.listdir(os.path.dirname(params["path"])))}
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(params["path"])
        outcome["connect"] = "connected"
    except OSError as exc:
        outcome["connect"] = type(exc).__name__
    return outcome


def end_by_signal(params: dict[str, Any]) -> str:
    """End this job process by a signal it raises itself (``raise``, ``abort``): works in a
    process cloned without the C library's fork (its cached thread id is the parent's)."""
    import signal

    if params["how"] == "abort":
        os.abort()
    signal.raise_signal(signal.SIGTERM)
    return "still running"


_BRING_UP_LOOPBACK = """
import fcntl, socket, struct
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    fcntl.ioctl(sock, 0x8914, struct.pack("16sH14x", b"lo", 0x1))  # SIOCSIFFLAGS: IFF_UP
    print("up")
except OSError as exc:
    print(type(exc).__name__)
"""


def bring_up_loopback(params: dict[str, Any]) -> str:
    """Try to bring the loopback interface up, from a subprocess (no Python-level guard)."""
    done = subprocess.run([sys.executable, "-c", _BRING_UP_LOOPBACK], capture_output=True,
                          text=True, timeout=10)
    return done.stdout.strip() or done.stderr.strip()


_ABSTRACT = """
import socket, sys
name = b"\\0" + sys.argv[2].encode()
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    if sys.argv[1] == "listen":
        sock.bind(name)
        sock.listen(1)
        sock.settimeout(float(sys.argv[3]))
        sock.accept()
        print("accepted")
    else:
        sock.connect(name)
        print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def abstract_socket(params: dict[str, Any]) -> str:
    """Listen on (``listen``: and wait ``seconds`` for a caller) or connect to the abstract
    Unix socket ``name``, from a subprocess."""
    done = subprocess.run(
        [sys.executable, "-c", _ABSTRACT, params["role"], params["name"],
         str(params.get("seconds", 1))], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or done.stderr.strip()
