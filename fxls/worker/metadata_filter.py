"""Where a job has no mount namespace of its own (no unprivileged user namespaces): a seccomp
filter that refuses every change of a file's metadata (mode, owner, times, extended
attributes) with ``EPERM``, for the job and everything it starts. Landlock, which guards
writes there, does not cover these.

A seccomp filter sees a path only as a pointer, so the refusal cannot depend on where the
file is: changes inside the job's private folder are refused too (``shutil.copy`` into it,
which copies the mode, fails). The filter is compiled by libseccomp through its Python
binding (the official ``seccomp`` module, else ``pyseccomp``, the same API over ctypes):
no hand-written BPF.
"""

from __future__ import annotations

import errno
import importlib
from types import ModuleType

#: the system calls that change a file's metadata (those this libseccomp does not know are
#: skipped: the kernel then has none of that name either, or libseccomp is older than it)
SYSCALLS = ("chmod", "fchmod", "fchmodat", "fchmodat2",
            "chown", "fchown", "lchown", "fchownat",
            "utime", "utimes", "futimesat", "utimensat",
            "setxattr", "lsetxattr", "fsetxattr", "setxattrat",
            "removexattr", "lremovexattr", "fremovexattr", "removexattrat")


def _binding() -> ModuleType | None:
    for name in ("seccomp", "pyseccomp"):
        try:
            return importlib.import_module(name)
        except Exception:  # absent, or libseccomp.so itself is missing (RuntimeError)
            continue
    return None


def available() -> bool:
    """Whether a libseccomp binding loads here."""
    return _binding() is not None


def refuse_metadata_changes() -> bool:
    """Install the filter in this process (irreversible, inherited by its children; sets
    ``no_new_privs``). False if no binding is available; raises OSError if the kernel
    refused."""
    binding = _binding()
    if binding is None:
        return False
    refused = binding.ERRNO(errno.EPERM)
    rules = binding.SyscallFilter(binding.ALLOW)
    for name in SYSCALLS:
        try:
            rules.add_rule(refused, name)
        except (OSError, ValueError, RuntimeError):
            continue
    rules.load()
    return True
