"""What a model's trace hands the blocks of the file's classes inside it: a list, tuple or
dict of traced values (HRNet's branches, a detection head's feature maps) is a Python
container there, not one input. The block's class, traced on its own, is given the same
structure (``concrete_args`` with ``PH`` leaves, as a torch.fx user would write), so that
``x[i] = branch(x[i])`` or ``for feature in x`` is no problem the model never has."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from fxcore import PH
from fxcore.proxy import Proxy


class GivenStructure:
    """The containers of traced values the blocks of each watched class were first given
    inside another class's trace."""

    def __init__(self) -> None:
        self._given: dict[type, dict[str, Any]] = {}

    def concrete_args(self, cls: type) -> dict[str, Any] | None:
        """``{parameter: [PH, PH]}`` for what the class's blocks were given as containers."""
        return self._given.get(cls) or None

    @contextmanager
    def watching(self, models: list[torch.nn.Module], classes: set[type]) -> Iterator[None]:
        """While ``models`` are traced, note what their blocks of ``classes`` are given."""
        blocks = {id(block): block for model in models for block in model.modules()
                  if block is not model and type(block) in classes}
        handles = [block.register_forward_pre_hook(self._note, with_kwargs=True)
                   for block in blocks.values()]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _note(self, module: torch.nn.Module, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> None:
        if type(module) in self._given or not _tracing(args, kwargs):
            return
        self._given[type(module)] = _containers(module, args, kwargs)


def _tracing(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A call made by a trace: some argument is, or holds, a traced value."""
    return any(_is_traced(v) or _structure(v) is not None
               for v in (*args, *kwargs.values()))


def _containers(module: torch.nn.Module, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return {}
    parameters = signature.parameters
    found = {}
    for name, value in bound.arguments.items():
        if parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL,
                                     inspect.Parameter.VAR_KEYWORD):
            continue
        structure = _structure(value)
        if structure is not None:
            found[name] = structure
    return found


def _structure(value: Any) -> Any:
    """A list/tuple/dict whose leaves are all traced values, with ``PH`` for each; else
    None."""
    if type(value) in (list, tuple) and value and all(_is_traced(v) for v in value):
        return type(value)([PH] * len(value))
    if type(value) in (dict, OrderedDict) and value and all(
            isinstance(k, str) and _is_traced(v) for k, v in value.items()):
        return type(value)((key, PH) for key in value)
    return None


def _is_traced(value: Any) -> bool:
    return isinstance(value, Proxy)
