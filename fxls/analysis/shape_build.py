"""Build models for the tracing phase: every module, parameter and buffer as the real build
makes them, but no weight initialiser run.

Tracing needs the module tree, the shapes and dtypes of parameters, and the values of
buffers (forward code reads those: ``if self.mask.sum() > 0``, an index from an arange
buffer); it never needs parameter values (torch.fx turns every ``self.weight`` into a
``get_attr`` proxy). Initialising weights is most of the cost of building a model (VGG16:
~90%; ViT-S: ~1 s), so while a model is built here:

- a module method named as a weight initialiser (``_init_weights``, ``init_weights``,
  ``reset_parameters``, ...) does nothing, unless it also ties weights (Hugging Face's
  ``init_weights``: tying changes which parameters exist);
- ``Module.apply(fn)`` does nothing when ``fn`` is named as an initialiser (every
  ``apply`` in the constructors of timm and torchvision is one);
- on a parameter's memory, the in-place fills and arithmetic initialisers use
  (``normal_``, ``mul_``, ``copy_``, ...) and ``torch.nn.init.*`` do nothing.

Parameters then hold uninitialised memory; buffers are computed as in the real build (only
a buffer drawn from the random generator gets other values: skipped fills draw nothing).
``parameter_values_read`` tells whether a trace read a parameter's values after all.

Initialisers that cost little next to the rest of the build still run (``Budget``): a model
of many small layers (initialising is a third of its build) is built for real, once, and
needs no second build for the complete report; the first expensive call and all after it
are skipped (ViT-S: initialising is 97% of its build).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from fxls.analysis.initialisers import (
    INIT_FUNCTIONS,
    INITIALISER_METHODS,
    PARAMETER_FILL_METHODS,
)
from fxls.analysis.meta_build import is_out_of_memory

#: torch calls that read a tensor's metadata or make a view, never its values
_METADATA_CALLS = frozenset((
    "__get__", "size", "dim", "numel", "stride", "is_floating_point", "is_complex",
    "element_size", "nelement", "ndimension", "is_contiguous", "detach", "view", "__len__",
    "data_ptr", "untyped_storage", "storage_offset", "get_device", "is_signed",
))


@dataclass(frozen=True)
class Budget:
    """How much initialising a build for tracing does for real: initialisers run while the
    time spent in them stays under ``allowance_s`` plus ``share`` of the rest of the build's
    time so far (and a call's expected cost, by the elements it initialises at
    ``seconds_per_element``, fits in what is left); the first that does not fit, and every
    one after it, is skipped."""

    allowance_s: float = 0.005
    share: float = 0.5
    seconds_per_element: float = 1e-8


#: skip every initialiser
NOTHING = Budget(allowance_s=0.0, share=0.0)


@dataclass
class _Skips:
    #: kept alive while the block runs: no other tensor gets their memory
    parameters: list[torch.Tensor] = field(default_factory=list)
    #: the addresses of their memory (``.data`` and views share it)
    storages: set[int] = field(default_factory=set)
    classes: dict[tuple[type, str], Any] = field(default_factory=dict)
    #: module classes whose initialiser methods are patched (their bases' too)
    patched: set[type] = field(default_factory=set)
    #: how many initialiser calls and fills were skipped (none: the build was a real one)
    count: int = 0
    #: seconds spent in initialisers run for real (those inside them not counted twice)
    spent: float = 0.0
    running: int = 0  # initialisers running for real: what they call runs too

    def is_parameter(self, tensor: Any) -> bool:
        return isinstance(tensor, torch.Tensor) and _storage(tensor) in self.storages


def _storage(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # meta and other storageless tensors
        return 0


def _is_initialiser(function: Any) -> bool:
    name = getattr(function, "__name__", None) or getattr(
        getattr(function, "func", None), "__name__", "")  # also a functools.partial
    return "init" in name.lower().replace("__init__", "") or "reset" in name.lower()


def _ties_weights(function: Any) -> bool:
    code = getattr(getattr(function, "__wrapped__", function), "__code__", None)
    return code is not None and any(n.startswith("tie") for n in code.co_names)


def _elements(values: Any) -> int:
    """The parameter elements an initialiser called with ``values`` may initialise."""
    count = 0
    for value in values:
        if isinstance(value, torch.nn.Module):
            modules = [value]
            while modules:  # a walk of its own: ``parameters()`` costs more than most calls
                module = modules.pop()
                count += sum(p.numel() for p in module._parameters.values() if p is not None)
                modules.extend(m for m in module._modules.values() if m is not None)
        elif isinstance(value, torch.Tensor):
            count += value.numel()
    return count


class _Initialisers:
    """Runs an initialiser for real or skips it, within a ``Budget``."""

    def __init__(self, skips: _Skips, budget: Budget) -> None:
        self.skips = skips
        self.budget = budget
        self.started = perf_counter()

    def call(self, original: Callable[..., Any], skipped: Any, *args: Any, **kwargs: Any) -> Any:
        """``original(*args, **kwargs)``, or ``skipped`` when it is skipped. An initialiser
        that raises is skipped too: the real build raises it again, reported as a failed
        construction where it always was."""
        skips = self.skips
        if skips.running:
            return original(*args, **kwargs)
        if not self._affordable(args):
            skips.count += 1
            return skipped
        skips.running += 1
        started = perf_counter()
        try:
            return original(*args, **kwargs)
        except Exception as error:
            if is_out_of_memory(error):
                raise
            skips.count += 1
            return skipped
        finally:
            skips.running -= 1
            skips.spent += perf_counter() - started

    def _affordable(self, args: tuple[Any, ...]) -> bool:
        skips, budget = self.skips, self.budget
        if skips.count:  # once one is skipped, the real build runs them all again anyway
            return False
        building = perf_counter() - self.started - skips.spent
        left = budget.allowance_s + budget.share * building - skips.spent
        return left > 0 and _elements(args) * budget.seconds_per_element <= left


@contextmanager
def initialisers_skipped(budget: Budget = NOTHING) -> Iterator[Callable[[], int]]:
    """Within the block, models are built without running their weight initialisers (but
    those ``budget`` affords); it gives how many initialiser calls and fills have been
    skipped so far (none: the build was a real one)."""
    skips = _Skips()
    initialisers = _Initialisers(skips, budget)
    undo: list[Callable[[], None]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        original = owner.__dict__[name] if name in owner.__dict__ else getattr(owner, name)
        undo.append(lambda: setattr(owner, name, original))
        setattr(owner, name, value)

    parameter_new = torch.nn.Parameter.__new__
    module_init = torch.nn.Module.__init__
    module_apply = torch.nn.Module.apply

    def new_parameter(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        parameter = parameter_new(cls, data, requires_grad)
        if storage := _storage(parameter):
            skips.parameters.append(parameter)
            skips.storages.add(storage)
        return parameter

    def budgeted(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def initialiser(self: Any, *args: Any, **kwargs: Any) -> Any:
            return initialisers.call(method, None, self, *args, **kwargs)

        return initialiser

    def init_module(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
        if type(self) not in skips.patched:
            skips.patched.add(type(self))
            patch_initialisers(type(self))
        module_init(self, *args, **kwargs)

    def patch_initialisers(cls: type) -> None:
        for owner in cls.__mro__:
            for name in INITIALISER_METHODS:
                method = owner.__dict__.get(name)
                if (callable(method) and (owner, name) not in skips.classes
                        and not _ties_weights(method)):
                    skips.classes[owner, name] = method
                    patch(owner, name, budgeted(method))

    def apply(self: torch.nn.Module, fn: Callable[[torch.nn.Module], None]) -> Any:
        if not _is_initialiser(fn):
            return module_apply(self, fn)
        return initialisers.call(module_apply, self, self, fn)

    def unless_parameter(original: Callable[..., Any]) -> Callable[..., Any]:
        def skipped_on_parameters(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            # inside a running initialiser ``call`` would run it anyway: no storage lookup
            if not skips.running and skips.is_parameter(tensor):
                return initialisers.call(original, tensor, tensor, *args, **kwargs)
            return original(tensor, *args, **kwargs)

        return skipped_on_parameters

    patch(torch.nn.Parameter, "__new__", staticmethod(new_parameter))
    patch(torch.nn.Module, "__init__", init_module)
    patch(torch.nn.Module, "apply", apply)
    for name in INIT_FUNCTIONS:
        if hasattr(torch.nn.init, name):
            patch(torch.nn.init, name, unless_parameter(getattr(torch.nn.init, name)))
    for name in PARAMETER_FILL_METHODS:
        patch(torch.Tensor, name, unless_parameter(getattr(torch.Tensor, name)))
    try:
        yield lambda: skips.count
    finally:
        while undo:
            undo.pop()()


class _ValueReads(TorchFunctionMode):
    """Notes a torch call, other than metadata and views, on the memory of ``storages``."""

    def __init__(self, storages: set[int]) -> None:
        super().__init__()
        self.storages = storages
        self.read = False

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if not self.read and getattr(func, "__name__", "") not in _METADATA_CALLS:
            self.read = any(self._reads(a) for a in (*args, *(kwargs or {}).values()))
        return func(*args, **(kwargs or {}))

    def _reads(self, value: Any) -> bool:
        if isinstance(value, torch.Tensor):
            return _storage(value) in self.storages
        if isinstance(value, list | tuple):  # torch.cat([...]) and the like: one level deep
            return any(isinstance(v, torch.Tensor) and _storage(v) in self.storages
                       for v in value)
        return False


@contextmanager
def parameter_values_read(module: torch.nn.Module) -> Iterator[Callable[[], bool]]:
    """Within the block, whether any torch call read the values of ``module``'s parameters
    (not through the graph: outside of it, as ``self.parameters()`` gives them)."""
    storages = {s for p in module.parameters() if (s := _storage(p))}
    watch = _ValueReads(storages)
    with watch:
        yield lambda: watch.read
