"""The copies of a model a pass runs on: its own parameters and buffers (a pass may change
them), with realistic values.

A freshly built model is close to the identity where it matters most to passes: a
BatchNorm's running mean is 0, its variance 1, its weight 1 and bias 0, so a conv-bn fusion
that drops the conv's bias or mishandles a BatchNorm without affine parameters changes the
outputs by 1e-7. Every copy a pass runs on, and the copy its result is compared with, so
has each floating parameter and buffer that still holds one value throughout (an
initialiser's fill) replaced by values drawn from a generator seeded with its name: the
same values before and after the pass, whatever the pass does to the module tree. Values
a calibrated model holds (a loaded state) are left as they are, and where the file keeps
its own instance of a model it traces (``model = Net()`` calibrated or loaded at import),
the copies take that instance's values.
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

import torch


def copy_modules(module: torch.nn.Module, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``module``'s tree of submodules with their own parameters and buffers
    (other attributes shared): what a pass may change, several times cheaper than
    ``copy.deepcopy`` (which copies every attribute of ~350 modules generically)."""
    memo = {} if memo is None else memo
    done = memo.get(id(module))
    if done is not None:
        return done
    copied = copy.copy(module)
    memo[id(module)] = copied
    copied._parameters = {
        name: None if p is None else _copied_tensor(p, memo)
        for name, p in module._parameters.items()}
    copied._buffers = {name: None if b is None else _copied_tensor(b, memo)
                       for name, b in module._buffers.items()}
    copied._modules = {name: None if m is None else copy_modules(m, memo)
                       for name, m in module._modules.items()}
    return copied


def _copied_tensor(tensor: torch.Tensor, memo: dict[int, Any]) -> Any:
    done = memo.get(id(tensor))
    if done is None:
        clone = tensor.detach().clone()
        done = memo[id(tensor)] = (torch.nn.Parameter(clone, tensor.requires_grad)
                                   if isinstance(tensor, torch.nn.Parameter) else clone)
    return done


def give_realistic_values(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` (a copy) with every constant-filled floating parameter and buffer drawn
    at random around its fill, seeded by its name (a 0 fill in [-0.5, 0.5), a fill ``c`` in
    [0.5c, 1.5c): variances stay positive)."""
    with torch.no_grad():
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            if not _constant_fill(tensor):
                continue
            fill = float(tensor.reshape(-1)[0])
            generator = torch.Generator().manual_seed(zlib.crc32(name.encode()))
            noise = torch.rand(tuple(tensor.shape), generator=generator)
            tensor.copy_((noise - 0.5) if fill == 0.0 else fill * (noise + 0.5))
    return module


def _constant_fill(tensor: torch.Tensor) -> bool:
    if not tensor.is_floating_point() or tensor.numel() == 0 or tensor.is_meta:
        return False
    flat = tensor.detach().reshape(-1)
    first = flat[0]
    return bool((flat[:16] == first).all()) and bool((flat == first).all())


def realistic_copy(graph_module: torch.nn.Module, instance: torch.nn.Module,
                   deep: bool = False) -> Any:
    """A copy of ``graph_module`` (a deep one for a pass written against fxcore) with the
    values of ``instance`` (the file's own model, when it is not the one traced), made
    realistic where they are still an initialiser's fill."""
    copied = copy.deepcopy(graph_module) if deep else copy_modules(graph_module)
    _take_values(copied, instance, graph_module)
    return give_realistic_values(copied)


def _take_values(copied: torch.nn.Module, instance: torch.nn.Module,
                 traced: torch.nn.Module) -> None:
    own = _tensors(instance)
    if all(own.get(name) is tensor for name, tensor in _tensors(traced).items()):
        return  # the graph module holds the instance's own tensors
    with torch.no_grad():
        for name, tensor in _tensors(copied).items():
            source = own.get(name)
            if source is not None and source.shape == tensor.shape and (
                    source.dtype == tensor.dtype):
                tensor.copy_(source)


def _tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def file_instance(namespace: dict[str, Any], built: torch.nn.Module) -> torch.nn.Module:
    """The file's own instance of ``built``'s class (a module global, calibrated or loaded
    as the file does it) when there is exactly one, in the same mode and with the same
    parameters and buffers (names and shapes) as ``built``; else ``built``."""
    found = {id(v): v for v in namespace.values() if type(v) is type(built) and v is not built}
    if len(found) != 1:
        return built
    (own,) = found.values()
    if own.training != built.training or _layout(own) != _layout(built):
        return built
    return own


def _layout(module: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {name: tuple(tensor.shape) for name, tensor in module.state_dict().items()}
