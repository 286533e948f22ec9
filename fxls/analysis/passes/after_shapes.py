"""Shapes of the nodes a pass added or changed: the graph it left, run on the example inputs
its graph before had (by node, recording each tensor's size and dtype), so that the graph
after the pass shows a shape on a node the pass made as on those the model made.

It runs after the check of the pass's outputs (``output_check``): what a run by node does to
the module's state (a BatchNorm's running statistics) cannot change that check."""

from __future__ import annotations

from typing import Any

import torch

from fxls.analysis.passes.output_check import Outcome, interpreter_class


def record_changed_shapes(outcomes: list[Outcome]) -> None:
    """Give the nodes each clean run added or rewired (``run.nodes``) their shape and dtype
    in the graph after the pass."""
    for outcome in outcomes:
        run = outcome.run
        if run is None or not run.nodes:
            continue
        inputs = outcome.subject.example_inputs()
        if inputs is None:
            continue
        module = getattr(outcome.result, "graph_module", outcome.result)
        with outcome.log.paused():
            shapes = node_shapes(module, inputs)
        for node in run.nodes:
            if node.name in shapes:
                node.shape, node.dtype = shapes[node.name]


def node_shapes(module: Any, inputs: tuple[Any, ...]) -> dict[str, tuple[list[int | str], str]]:
    """Each tensor-valued node's size and dtype (``float32``) when ``module`` (a graph
    module) runs on ``inputs``; the nodes before the one that raised, if one does."""
    interpreter = interpreter_class(module)
    if interpreter is None:
        return {}
    found: dict[str, tuple[list[int | str], str]] = {}

    class Recording(interpreter):  # type: ignore[misc, valid-type]
        def run_node(self, n: Any) -> Any:
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                found[n.name] = ([int(d) for d in value.shape],
                                 str(value.dtype).replace("torch.", ""))
            return value

    try:
        with torch.no_grad():
            Recording(module).run(*inputs)
    except Exception:  # the outputs' check says why the result cannot run
        pass
    return found
