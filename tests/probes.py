"""What this machine's kernel allows, found without the code under test (``fxls.worker.sandbox``
probes the same facts for itself; a sandbox test that trusted it would skip exactly when the
sandbox broke). A sandbox test skips only where these say the kernel cannot enforce; where
they say it can, missing enforcement fails."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import shutil
import subprocess
import sys

LINUX = sys.platform.startswith("linux")


def _namespaces() -> bool:
    """``unshare -Urpn true``: unprivileged user, PID and network namespaces."""
    unshare = shutil.which("unshare")
    if not LINUX or unshare is None:
        return False
    return subprocess.run([unshare, "-Urpn", "true"], capture_output=True,
                          timeout=30).returncode == 0


def _landlock_abi() -> int:
    """``landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)``."""
    if not LINUX:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    return max(0, int(libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))))


def _seccomp() -> bool:
    """The kernel filters system calls and libseccomp (which fxls's binding loads) is here."""
    try:
        with open("/proc/self/status") as handle:
            kernel = any(line.startswith("Seccomp:") for line in handle)
    except OSError:
        return False
    return kernel and ctypes.util.find_library("seccomp") is not None


def _kernel_release() -> tuple[int, int]:
    """The running kernel's (major, minor), from ``uname``."""
    import platform

    found = re.match(r"(\d+)\.(\d+)", platform.release()) if LINUX else None
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


NAMESPACES = _namespaces()
#: a process may create siblings of itself (``clone(CLONE_PARENT)``, every Linux): zygotes
#: fork the job processes, and learned libraries live in zygotes
SIBLING_FORKS = LINUX
KERNEL = _kernel_release()
LANDLOCK_ABI = _landlock_abi()
SECCOMP = _seccomp()
