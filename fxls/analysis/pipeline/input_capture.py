"""The inputs a harvested instance (a block found inside a built model) gets when its
root runs: the real inputs its second phase runs it on."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch
from torch.utils._pytree import tree_map

from fxls.analysis.pipeline.symbolic_trace import TracedModule


def inputs_wanted(traced: TracedModule, harvested: dict[int, TracedModule]) -> list[TracedModule]:
    """The harvested instances inside ``traced``'s instance that still need real inputs."""
    if traced.module_report.via is not None or not harvested:
        return []
    return [t for m in traced.instance.modules()
            if (t := harvested.get(id(m))) is not None and t.captured is None]


@contextmanager
def capturing_inputs(wanted: list[TracedModule]) -> Iterator[None]:
    """While the root runs, keep the first positional inputs each wanted instance gets."""

    def hook(target: TracedModule, module: Any, args: tuple[Any, ...], kwargs: dict) -> None:
        if target.captured is not None:
            return
        values = _positional(module, args, kwargs)
        if values:  # copied now: the root may append to a list it passed (DenseNet's)
            target.captured = tuple(tree_map(
                lambda a: a.detach().clone() if isinstance(a, torch.Tensor) else a, values))

    handles = [t.instance.register_forward_pre_hook(partial(hook, t), with_kwargs=True)
               for t in wanted]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _positional(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """A call's arguments as ``forward``'s positional parameters in order, defaults filled
    in (``blk(x, rope=rope)`` -> ``[x, rope, None, False]``); [] when that is not possible
    (``*args``/``**kwargs`` in the signature)."""
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return []
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
           for p in signature.parameters.values()):
        return list(args) if not kwargs else []
    bound.apply_defaults()
    return list(bound.arguments.values())
