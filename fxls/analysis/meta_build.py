"""Build models on the meta device fast, to learn their structure and size; and build them
for real within a memory budget.

On the meta device no values exist, yet initialisers still run their Python (timm's
``trunc_normal_`` is five tensor passes per weight): a meta ViT-B takes ~0.25 s, of which
~0.02 s is building modules. While a model is built here, the initialisers and the in-place
random and arithmetic methods they use do nothing. Only for meta builds: values built here
are never used.
"""

from __future__ import annotations

import resource
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch

from fxls.analysis.initialisers import FILL_METHODS, INIT_FUNCTIONS

T = TypeVar("T")


def on_meta(build: Callable[[], T]) -> T:
    """``build()`` on the meta device, its initialisers skipped."""
    with torch.device("meta"), _initialisers_skipped():
        return build()


def _keep(tensor: Any, *args: Any, **kwargs: Any) -> Any:
    return tensor


@contextmanager
def _initialisers_skipped() -> Iterator[None]:
    saved_init = {name: getattr(torch.nn.init, name) for name in INIT_FUNCTIONS
                  if hasattr(torch.nn.init, name)}
    saved_methods = {name: getattr(torch.Tensor, name) for name in FILL_METHODS}
    try:
        for name in saved_init:
            setattr(torch.nn.init, name, _keep)
        for name in saved_methods:
            setattr(torch.Tensor, name, _keep)
        yield
    finally:
        for name, function in saved_init.items():
            setattr(torch.nn.init, name, function)
        for name, method in saved_methods.items():
            setattr(torch.Tensor, name, method)


_OUT_OF_MEMORY = ("can't allocate memory", "DefaultCPUAllocator: not enough memory")


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is an allocation refused (by ``memory_budget`` or the machine)."""
    return isinstance(error, MemoryError) or any(m in str(error) for m in _OUT_OF_MEMORY)


@contextmanager
def memory_budget(megabytes: int) -> Iterator[None]:
    """Allocations beyond ``megabytes`` more address space than now fail (MemoryError) while
    the block runs: the process's soft ``RLIMIT_AS``, lowered for the block, then put back."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm", encoding="ascii") as statm:
            used = int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError):
        yield
        return
    limit = used + megabytes * 1024 * 1024
    if soft != resource.RLIM_INFINITY:
        limit = min(limit, soft)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
