"""Shapes of a partial graph, while the user fixes what tracing reported.

A graph with trace problems still runs up to its first node that cannot (a stand-in branch
taken, an opaque submodule): every node before it gets its shape, which is what inlay hints,
hover and the node table show. Inputs are the module's own (an ``args`` pragma), else
inferred from the graph's first layers as for a complete graph (with the leading optional
parameters a Hugging Face ``forward`` has). A graph whose inputs reach no layer gets none: a
guess from the model's first layer would have to run the whole model eagerly first to be
trusted, for the shapes of the inputs alone. Images are at the size the model says it
expects when it says one: a partial run cannot tell a wrong size from a wrong graph, so there
is no second try. A model too big to build for real (built on the meta device) runs on meta
inputs: shapes without values. Inferred inputs serve these shapes only: the module's example
inputs stay unknown, as the export/compile tiers and the passes expect of a partial trace.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_map

from fxls.analysis.construction import on_meta_device
from fxls.analysis.inputs import infer_inputs, spatial_size
from fxls.analysis.observe import observe
from fxls.analysis.pipeline.symbolic_trace import TracedModule
from fxls.analysis.real_weights import State


def observe_partial_graph(traced: TracedModule, *, training: bool) -> None:
    """Give the nodes of ``traced``'s partial graph that run on its inputs their shapes."""
    gm = traced.ctx.graph_module
    inputs = _inputs_for_shapes(traced)
    if gm is not None and inputs is not None:
        observe(gm, inputs, training=training, record_backward=False)


def _inputs_for_shapes(traced: TracedModule) -> tuple[Any, ...] | None:
    """The module's own example inputs, else ones inferred for this run, on the meta device
    for a model built there (None: none found, or the model's real weights missing)."""
    if traced.ctx.example_inputs is not None:
        return traced.ctx.example_inputs
    gm, instance = traced.ctx.graph_module, traced.instance
    if gm is None or not traced.inputs_inferred or _weights_missing(traced):
        return None
    size = spatial_size(instance)
    for leading_optional in (False, True):
        try:
            found = infer_inputs(gm, size, leading_optional=leading_optional)
        except Exception:  # a first layer fxls cannot build an input for
            found = None
        if found is not None:
            return tree_map(_to_meta, found) if on_meta_device(instance) else found
    return None


def _weights_missing(traced: TracedModule) -> bool:
    return traced.weights is not None and traced.weights.state is not State.REAL


def _to_meta(value: Any) -> Any:
    return value.to("meta") if isinstance(value, torch.Tensor) else value
