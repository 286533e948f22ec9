"""Real weights for a model the tracing phase built without initialisers (``shape_build``).

The complete report (example-input runs: outputs, backward nodes, graph vs eager) needs
them: the first time it does, the model is built again for real, from the same call and
seed as before, and its parameters move into the instance that was traced (the graph
modules traced from it share its parameters, so they get the real values too).

The build for tracing is faithful when the real one equals it in all but parameter values:
the same modules, the same parameters and buffers (names, shapes, dtypes, which are shared),
the same buffer values and the same plain attributes. When they differ (an initialiser that
the tracing build skipped did more than initialise, a buffer drawn from the random
generator), the tracing phase saw another model than the real one: ``differs`` says how, and
the real instance is kept so that the caller can trace it again.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

_PLAIN = (bool, int, float, str, type(None))


class State(enum.Enum):
    PENDING = "pending"
    REAL = "real"  # the traced instance has its real weights
    FAILED = "failed"  # the real build raised (``error``)
    DIFFERS = "differs"  # the real build is another model (``difference``, ``real``)


@dataclass(frozen=True)
class _Fingerprint:
    modules: list[tuple[str, type]]
    tensors: list[tuple[str, tuple[int, ...], torch.dtype, bool, str]]
    buffers: list[tuple[str, torch.Tensor]]
    attributes: list[dict[str, Any]]


def _walk(model: torch.nn.Module) -> tuple[
        list[tuple[str, torch.nn.Module]], list[tuple[str, torch.Tensor]],
        list[tuple[str, torch.Tensor]]]:
    """Modules, parameters and buffers with their names, duplicates kept, in the order of
    ``named_modules`` / ``named_parameters`` / ``named_buffers`` — in one pass over the
    modules (those walk them once each: three walks of a model of thousands of modules)."""
    modules = list(model.named_modules(remove_duplicate=False))
    parameters, buffers = [], []
    for path, module in modules:
        prefix = f"{path}." if path else ""
        parameters.extend((prefix + name, p) for name, p in module._parameters.items()
                          if p is not None)
        buffers.extend((prefix + name, b) for name, b in module._buffers.items()
                       if b is not None)
    return modules, parameters, buffers


def _fingerprint(model: torch.nn.Module) -> _Fingerprint:
    modules, parameters, buffers = _walk(model)
    first_name: dict[int, str] = {}
    tensors = []
    for name, tensor in (*parameters, *buffers):
        shared = first_name.setdefault(id(tensor), name)
        tensors.append((name, tuple(tensor.shape), tensor.dtype, tensor.requires_grad, shared))
    return _Fingerprint(
        [(name, type(m)) for name, m in modules], tensors,
        [(n, b.detach().clone()) for n, b in buffers],
        [{k: v for k, v in vars(m).items() if isinstance(v, _PLAIN) and k != "training"}
         for _, m in modules])


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_meta or b.is_meta:
        return a.is_meta and b.is_meta
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(a, b) or (torch.equal(a.isnan(), b.isnan())
                    and torch.equal(a.nan_to_num(), b.nan_to_num())))
    return bool(torch.equal(a, b))


def _difference(fast: _Fingerprint, real: _Fingerprint) -> str | None:
    if fast.modules != real.modules:
        return "its submodules differ"
    if fast.tensors != real.tensors:
        return "its parameters or buffers differ (names, shapes, dtypes or sharing)"
    for (name, a), (_, b) in zip(fast.buffers, real.buffers, strict=True):
        if not _same_tensor(a, b):
            return f"the values of buffer `{name}` differ"
    for (path, _), mine, theirs in zip(fast.modules, fast.attributes, real.attributes,
                                      strict=True):
        for key in mine.keys() | theirs.keys():
            if key not in mine or key not in theirs:
                if "init" not in key:  # a mark of initialisation done (``_is_hf_initialized``)
                    return f"attribute `{'.'.join(filter(None, (path, key)))}` is set in one only"
            elif not _same_value(mine[key], theirs[key]):
                return f"attribute `{'.'.join(filter(None, (path, key)))}` differs"
    return None


class RealWeights:
    """The pending real build of one root model built for tracing (shared by the instances
    found inside it)."""

    def __init__(self, make: Callable[[], Any], root: torch.nn.Module) -> None:
        self.make = make
        self.root = root
        self.state = State.PENDING
        self.error: BaseException | None = None
        self.difference = ""
        self.real: torch.nn.Module | None = None
        self._fingerprint = _fingerprint(root)  # now: tracing may change buffers and attributes

    def realise(self) -> State:
        """Build for real (once) and give the traced instance the real parameters."""
        if self.state is not State.PENDING:
            return self.state
        try:
            real = self.make()
        except (Exception, SystemExit) as error:
            self.state, self.error = State.FAILED, error
            return self.state
        if not isinstance(real, torch.nn.Module):
            self.state, self.difference = State.DIFFERS, f"it gave a {type(real).__name__}"
            return self.state
        difference = _difference(self._fingerprint, _fingerprint(real))
        if difference is not None:
            self.state, self.difference, self.real = State.DIFFERS, difference, real
            return self.state
        traced = dict(_walk(self.root)[1])
        for name, parameter in _walk(real)[1]:
            traced[name].data = parameter.data
        self.state = State.REAL
        return self.state

    def counterpart(self, instance: torch.nn.Module) -> torch.nn.Module | None:
        """``instance`` (the root or a module inside it) in the real build (when it differs)."""
        if self.real is None:
            return None
        for name, module in self.root.named_modules(remove_duplicate=False):
            if module is instance:
                try:
                    return self.real.get_submodule(name)
                except AttributeError:
                    return None
        return None
