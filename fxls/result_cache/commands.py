"""``fxls cache info`` and ``fxls cache clean``: what they print."""

from __future__ import annotations

from fxls.result_cache.location import SIZE_VARIABLE
from fxls.result_cache.store import ResultCache


def cache_info(cache: ResultCache) -> str:
    usage = cache.usage()
    return (f"path: {cache.folder}\n"
            f"entries: {usage.entries}\n"
            f"size: {_megabytes(usage.size_bytes)} (bound {_megabytes(cache.limit_bytes)}, "
            f"{SIZE_VARIABLE})\n")


def cache_clean(cache: ResultCache) -> str:
    removed = cache.clean()
    return (f"fxls: removed {removed.entries} cached results "
            f"({_megabytes(removed.size_bytes)}) from {cache.folder}\n")


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
