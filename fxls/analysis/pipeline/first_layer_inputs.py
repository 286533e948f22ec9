"""Inputs for a model whose graph does not say what its input is: the trace stopped before
the input reached a layer (Hugging Face's models raise in their decorators' bookkeeping
before ``input_ids`` is used), or reached it on a branch the trace did not take.

A model's first layer is, as a rule, where its first input goes: token ids for an
``Embedding`` (BERT, GPT-2), an image batch for a patch embedding's or a stem's ``Conv2d``
(a ViT at the size it says it expects, a ResNet). Only for a ``forward`` with one input
to give (every other parameter has a default); a ``list[Tensor]`` parameter gets its images
one by one (torchvision's detection models). A guess: the module must run on it eagerly
before export or compile is asked about it (``target_inputs``).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from fxls.analysis.inputs import input_for_layer, spatial_size

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def first_layer_inputs(model: torch.nn.Module) -> tuple[Any, ...] | None:
    """``(value,)`` for ``forward``'s first parameter, from the first layer that fixes its
    input's shape; None when ``forward`` needs more, or no layer says."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in parameters if p.kind in _POSITIONAL]
    if not positional or any(p.default is p.empty for p in positional[1:]):
        return None
    value = _first_layer_input(model)
    if value is None:
        return None
    if _is_list(positional[0].annotation):
        return (list(value.unbind(0)),)
    return (value,)


def _first_layer_input(model: torch.nn.Module) -> torch.Tensor | None:
    size = spatial_size(model)
    for module in model.modules():
        if next(module.children(), None) is not None:
            continue  # a container: its layers come next
        value = input_for_layer(module, size) if size else input_for_layer(module)
        if value is not None:
            return value
    return None


def _is_list(annotation: Any) -> bool:
    """``list[Tensor]``, ``List[torch.Tensor]``, or the same as a string (postponed
    annotations)."""
    if isinstance(annotation, str):
        return annotation.replace(" ", "").lower().startswith(("list[", "typing.list["))
    return getattr(annotation, "__origin__", None) is list
