"""What imported libraries declare about tracing: modules to keep as leaves and functions to
keep opaque, as their own FX tooling traces them.

- ``torch.fx.wrap("name")`` registrations (torchvision's ``stochastic_depth``, swin's window
  attention) are adopted by fxcore (``fxcore.interop.adopt_torch_fx_wraps``).
- timm's ``register_notrace_module`` / ``register_notrace_function`` (``timm.layers._fx``),
  which timm's own FX feature extraction passes to the tracer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fxcore.interop


@dataclass
class Registrations:
    #: qualified class names (``timm.layers.mlp.Mlp``) traced as leaf modules
    leaf_classes: set[str] = field(default_factory=set)
    #: functions recorded as one call_function node
    functions: list[Callable[..., Any]] = field(default_factory=list)
    #: who declared each leaf class, for the status of such a class
    declared_by: dict[str, str] = field(default_factory=dict)


def registrations() -> Registrations:
    """The declarations of the libraries imported so far (call after the file ran)."""
    fxcore.interop.adopt_torch_fx_wraps()
    found = Registrations()
    timm_fx = sys.modules.get("timm.layers._fx")
    if timm_fx is not None:
        for cls in list(getattr(timm_fx, "_leaf_modules", ())):
            if isinstance(cls, type):
                name = f"{cls.__module__}.{cls.__qualname__}"
                found.leaf_classes.add(name)
                found.declared_by[name] = "timm's register_notrace_module"
        for function in list(getattr(timm_fx, "_autowrap_functions", ())):
            if callable(function):
                found.functions.append(function)
    return found
