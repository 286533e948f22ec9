"""Jobs that attack their sandbox, run by tests/security/test_sandbox*.py."""

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


_UNIX_CONNECT = """
import socket, sys
try:
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(sys.argv[1])
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


def unix_connect(params: dict[str, Any]) -> dict[str, Any]:
    """Connect to the Unix socket ``params["path"]`` from Python (``connect``) and from a
    subprocess (``subprocess``: no Python-level guard there); list its folder."""
    outcome: dict[str, Any] = {"listing": sorted(os.listdir(os.path.dirname(params["path"])))}
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(params["path"])
        outcome["connect"] = "connected"
    except OSError as exc:
        outcome["connect"] = type(exc).__name__
    done = subprocess.run([sys.executable, "-c", _UNIX_CONNECT, params["path"]],
                          capture_output=True, text=True, timeout=10)
    outcome["subprocess"] = done.stdout.strip() or done.stderr.strip()
    return outcome


#: changes of a file that exists outside the private folder, each by Python code in the job
#: (``python``: the guard sees it) and by a subprocess (``subprocess``: only the kernel
#: stands in the way); ``{path}`` is the file, ``{new}`` a path next to it that does not exist
CHANGES = {
    "chmod": "os.chmod({path!r}, 0o4755)",
    "utime": "os.utime({path!r}, (0, 0))",
    "setxattr": "os.setxattr({path!r}, 'user.fxls', b'1')",
    "chown": "os.chown({path!r}, os.getuid(), os.getgid())",
    "link": "os.link({path!r}, {new!r})",
    "symlink": "os.symlink({path!r}, {new!r})",
    "fchmod": "os.fchmod(os.open({path!r}, os.O_RDONLY), 0o4755)",
    "truncate": "os.truncate({path!r}, 0)",
    "delete": "os.remove({path!r})",
    "rename": "os.rename({path!r}, {new!r})",
}


def change_outside(params: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Try each change named in ``params["changes"]`` on its own file ``params["files"][name]``
    from Python, then from a subprocess; the outcome is "changed" or the error's name and
    errno name."""
    outcome: dict[str, dict[str, str]] = {}
    for name in params["changes"]:
        path = params["files"][name]
        code = CHANGES[name].format(path=path, new=path + ".new")
        result = {}
        try:
            exec(code, {"os": os})
            result["python"] = "changed"
        except OSError as exc:
            result["python"] = f"{type(exc).__name__} {errno_name(exc.errno)}"
        script = (f"import errno, os\ntry:\n    {code}\n    print('changed')\n"
                  "except OSError as exc:\n"
                  "    print(type(exc).__name__, errno.errorcode.get(exc.errno))")
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=10)
        result["subprocess"] = done.stdout.strip() or done.stderr.strip()
        outcome[name] = result
    return outcome


def errno_name(number: int | None) -> str:
    import errno

    return errno.errorcode.get(number or 0, str(number))


def environment(params: dict[str, Any]) -> dict[str, Any]:
    """The job's environment, as Python, a subprocess and /proc/self/environ see it."""
    done = subprocess.run(["env", "-0"], capture_output=True, timeout=10)
    with open("/proc/self/environ", "rb") as handle:
        initial = handle.read()
    return {"python": dict(os.environ),
            "subprocess": sorted(item.partition(b"=")[0].decode()
                                 for item in done.stdout.split(b"\0") if item),
            "initial": initial.decode(errors="replace")}


_UDP = """
import socket, sys
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    sock.sendto(b"fxls", ("127.0.0.1", int(sys.argv[1])))
    print("sent")
except OSError as exc:
    print(type(exc).__name__)
try:
    socket.getaddrinfo(sys.argv[2], 80)
    print("resolved")
except OSError as exc:
    print(type(exc).__name__)
"""


def udp_and_names(params: dict[str, Any]) -> dict[str, str]:
    """Send a UDP datagram to ``params["port"]`` on the loopback and resolve
    ``params["name"]``, from Python and from a subprocess."""
    outcome = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.sendto(b"fxls", ("127.0.0.1", params["port"]))
        outcome["python udp"] = "sent"
    except OSError as exc:
        outcome["python udp"] = type(exc).__name__
    try:
        socket.getaddrinfo(params["name"], 80)
        outcome["python name"] = "resolved"
    except OSError as exc:
        outcome["python name"] = type(exc).__name__
    done = subprocess.run([sys.executable, "-c", _UDP, str(params["port"]), params["name"]],
                          capture_output=True, text=True, timeout=30)
    lines = [*done.stdout.split(), "?", "?"][:2]
    outcome["subprocess udp"], outcome["subprocess name"] = lines
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
        print("listening", flush=True)
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
    """Listen on (``listen``: and wait ``seconds`` for a caller, sending the partial result
    "listening" once it does) or connect to the abstract Unix socket ``name``, from a
    subprocess."""
    from fxls.worker import api

    process = subprocess.Popen(
        [sys.executable, "-c", _ABSTRACT, params["role"], params["name"],
         str(params.get("seconds", 1))], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)
    assert process.stdout is not None
    first = process.stdout.readline().strip()
    if first == "listening":
        api.send_partial("listening")
        first = process.stdout.readline().strip()
    process.wait(timeout=30)
    return first


def change_inside(params: dict[str, Any]) -> dict[str, str]:
    """Write, link, symlink, rename, delete and chmod files in the job's private folder."""
    folder = Path(tempfile.gettempdir())
    steps = {
        "write": lambda: (folder / "a").write_text("mine"),
        "link": lambda: os.link(folder / "a", folder / "b"),
        "symlink": lambda: os.symlink(folder / "a", folder / "c"),
        "rename": lambda: os.rename(folder / "b", folder / "d"),
        "delete": lambda: os.remove(folder / "d"),
        "chmod": lambda: os.chmod(folder / "a", 0o600),
    }
    outcome = {}
    for name, step in steps.items():
        try:
            step()
            outcome[name] = "changed"
        except OSError as exc:
            outcome[name] = type(exc).__name__
    return outcome


def remount_and_change(params: dict[str, Any]) -> dict[str, str]:
    """Try to make the mounts writable again (``mount_setattr``, a remount, unmounting
    /proc), then chmod ``params["path"]`` from a subprocess."""
    import ctypes

    class Attr(ctypes.Structure):
        _fields_ = [("set", ctypes.c_uint64), ("clr", ctypes.c_uint64),
                    ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]

    libc = ctypes.CDLL(None, use_errno=True)
    attr = Attr(0, 1, 0, 0)  # clear MOUNT_ATTR_RDONLY
    tries = [
        libc.syscall(442, ctypes.c_int(-100), b"/", ctypes.c_uint(0x8000), ctypes.byref(attr),
                     ctypes.c_size_t(ctypes.sizeof(attr))),
        libc.mount(None, b"/", None, 32 | 4096, None),  # MS_REMOUNT | MS_BIND
        libc.mount(None, os.path.dirname(params["path"]).encode(), None, 32 | 4096, None),
        libc.umount2(b"/proc", 2),
    ]
    done = subprocess.run(
        [sys.executable, "-c", "import errno, os, sys\ntry:\n    os.chmod(sys.argv[1], 0o4755)\n"
         "    print('changed')\nexcept OSError as exc:\n"
         "    print(type(exc).__name__, errno.errorcode.get(exc.errno))", params["path"]],
        capture_output=True, text=True, timeout=10)
    return {"remount": "refused" if all(t != 0 for t in tries) else f"done {tries}",
            "chmod": done.stdout.strip() or done.stderr.strip()}
