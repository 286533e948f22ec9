"""The autograd side of a graph: which backward node each FX node's output gets.

Running a GraphModule on example inputs with autograd on, each tensor an FX node produces
carries a ``grad_fn`` (``AddmmBackward0``...). Walking ``next_functions`` from the outputs
gives the backward DAG; its leaves are ``AccumulateGrad`` nodes, named here by the parameter
they accumulate into.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.graph_module import GraphModule
from fxcore.interpreter import Interpreter
from fxcore.node import Node, map_aggregate

__all__ = ["BackwardNode", "BackwardEdge", "AutogradView", "autograd_view", "first_grad_fn"]


@dataclass(frozen=True)
class BackwardNode:
    id: int
    name: str  # e.g. "AddmmBackward0", "AccumulateGrad"
    parameter: str | None = None  # for AccumulateGrad: the parameter's qualified name


@dataclass(frozen=True)
class BackwardEdge:
    source: int  # the backward node that consumes the gradient
    target: int  # the backward node it sends a gradient to (next_functions)
    input_nr: int


@dataclass
class AutogradView:
    backward_of: dict[str, str] = field(default_factory=dict)  # FX node name -> backward name
    nodes: list[BackwardNode] = field(default_factory=list)
    edges: list[BackwardEdge] = field(default_factory=list)


def first_grad_fn(value: Any) -> Any | None:
    """The backward node of the first tensor in ``value`` (a tensor or a nested structure)."""
    found: list[Any] = []

    def look(item: Any) -> Any:
        if not found and isinstance(item, torch.Tensor) and item.grad_fn is not None:
            found.append(item.grad_fn)
        return item

    map_aggregate(value, look)
    return found[0] if found else None


class _Recorder(Interpreter):
    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.grad_fns: dict[str, Any] = {}

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        grad_fn = first_grad_fn(result)
        if grad_fn is not None:
            self.grad_fns[n.name] = grad_fn
        return result


def autograd_view(gm: GraphModule, *example_inputs: Any) -> AutogradView:
    """Run ``gm`` on ``example_inputs`` and describe the autograd graph it builds."""
    recorder = _Recorder(gm)
    with torch.enable_grad():
        recorder.run(*example_inputs)
    parameter_names = {id(p): n for n, p in gm.named_parameters()}
    view = AutogradView({name: type(fn).__name__ for name, fn in recorder.grad_fns.items()})
    ids: dict[Any, int] = {}
    pending = list(recorder.grad_fns.values())

    def node_id(fn: Any) -> int:
        if fn not in ids:
            ids[fn] = len(ids)
            variable = getattr(fn, "variable", None)
            parameter = parameter_names.get(id(variable)) if variable is not None else None
            view.nodes.append(BackwardNode(ids[fn], type(fn).__name__, parameter))
            pending.append(fn)
        return ids[fn]

    for fn in list(pending):
        node_id(fn)
    seen: set[Any] = set()
    while pending:
        fn = pending.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for next_fn, input_nr in getattr(fn, "next_functions", ()):
            if next_fn is None:
                continue
            view.edges.append(BackwardEdge(node_id(fn), node_id(next_fn), input_nr))
    return view
