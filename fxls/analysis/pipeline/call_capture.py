"""The first call an instance gets while a model around it runs eagerly: its positional and
keyword arguments, kept only once that call has returned (inputs it raised on are no inputs).

The export and compile tiers run a class on what its model really gives it when the
symbolic-trace tier has no inputs of its own for it: a transformer layer called with
``attention_mask=...``, a detection head after ``flatten``, a block whose root's trace was
partial (so the observing stage never ran the root).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_map

#: what export takes as an input: tensors, and constants it specializes on
_INPUTS = (torch.Tensor, int, float, bool, str, type(None), torch.dtype, torch.device)


@dataclass(frozen=True)
class Call:
    """The arguments of one call of a module, copied when it was made."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def exportable(self) -> bool:
        """Only tensors and constants (a cache object or a config passed to ``forward`` is
        no input export can take: the failure would be about fxls's inputs, not the code)."""
        leaves, _ = tree_flatten((self.args, self.kwargs))
        return all(isinstance(leaf, _INPUTS) for leaf in leaves)


@dataclass
class _Watch:
    pending: Call | None = None
    done: Call | None = None


@contextmanager
def first_calls(instances: list[torch.nn.Module]) -> Iterator[dict[int, Call]]:
    """While the body runs, the first call of each instance that returned, by ``id``."""
    watches = {id(instance): _Watch() for instance in instances}
    calls: dict[int, Call] = {}

    def before(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        watch = watches[id(module)]
        if watch.done is None:  # copied now: the caller may change what it passed
            watch.pending = Call(*tree_map(_copied, (tuple(args), dict(kwargs))))

    def after(module: torch.nn.Module, _args: Any, _output: Any) -> None:
        watch = watches[id(module)]
        if watch.done is None and watch.pending is not None:
            watch.done = calls[id(module)] = watch.pending

    handles = [hook for instance in instances for hook in (
        instance.register_forward_pre_hook(before, with_kwargs=True),
        instance.register_forward_hook(after))]
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def _copied(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value
