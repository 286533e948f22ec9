"""Where the result cache lives and how large it may grow: in the user's cache folder,
never in a repository (a cloned repository cannot ship results), set by the user's
environment only.

- ``FXLS_CACHE_DIR``: the folder (default ``$XDG_CACHE_HOME/fxls``, else ``~/.cache/fxls``);
- ``FXLS_CACHE_MAX_MB``: its size bound in MB (default 200; the entries used longest ago go
  first); a value that is not a positive number is ignored;
- ``FXLS_NO_CACHE=1``: neither read nor write it (as ``fxls check --no-cache``).
"""

from __future__ import annotations

import os

CACHE_DIR_VARIABLE = "FXLS_CACHE_DIR"
SIZE_VARIABLE = "FXLS_CACHE_MAX_MB"
NO_CACHE_VARIABLE = "FXLS_NO_CACHE"
DEFAULT_SIZE_MB = 200


def cache_folder() -> str:
    """The cache's folder (absolute)."""
    chosen = os.environ.get(CACHE_DIR_VARIABLE)
    if chosen:
        return os.path.abspath(chosen)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fxls")


def size_limit_bytes() -> int:
    """The bound on the entries' total size, in bytes."""
    try:
        megabytes = float(os.environ.get(SIZE_VARIABLE, ""))
    except ValueError:
        megabytes = DEFAULT_SIZE_MB
    if not 0 < megabytes < float("inf"):
        megabytes = DEFAULT_SIZE_MB
    return int(megabytes * 1024 * 1024)


def cache_disabled() -> bool:
    """Whether the environment turns the cache off (``FXLS_NO_CACHE`` set, not ``0``)."""
    return os.environ.get(NO_CACHE_VARIABLE, "") not in ("", "0")
