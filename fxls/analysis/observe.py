"""One run of a traced graph on example inputs that learns everything the report needs:
each node's shape and dtype (ShapeProp), its backward node (autograd view), and the
output (for the graph-vs-eager check and the fix-verification signature)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.autograd_view import first_grad_fn
from fxcore.graph_module import GraphModule
from fxcore.node import Node, map_aggregate
from fxcore.passes.shape_prop import ShapeProp


@dataclass
class Observation:
    output: Any = None
    backward: dict[str, str] = field(default_factory=dict)
    ok: bool = False
    #: why the run failed (``AssertionError: Input height (32) doesn't match model (224)``)
    error: str = ""


class _Observer(ShapeProp):
    wrap_node_errors = False  # the error as the user's code raised it, not ShapeProp's wrapper

    def __init__(self, module: GraphModule, record_backward: bool) -> None:
        super().__init__(module)
        self.record_backward = record_backward
        self.backward: dict[str, str] = {}

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if self.record_backward and n.op not in ("placeholder", "output"):
            grad_fn = first_grad_fn(result)
            if grad_fn is not None:
                self.backward[n.name] = type(grad_fn).__name__
        return result


def observe(
    gm: GraphModule, inputs: tuple[Any, ...], *, record_backward: bool, training: bool = False
) -> Observation:
    observer = _Observer(gm, record_backward)
    gm.train(training)
    try:
        with torch.enable_grad() if record_backward else torch.no_grad():
            torch.manual_seed(2)
            output = observer.run(*copy.deepcopy(inputs))
    except Exception as error:
        text = str(error).strip().splitlines()
        return Observation(error=f"{type(error).__name__}: {text[0][:200] if text else ''}")
    if record_backward:
        output = map_aggregate(
            output, lambda v: v.detach() if isinstance(v, torch.Tensor) else v
        )
    return Observation(output, observer.backward, True)


def run_eager(
    module: torch.nn.Module, inputs: tuple[Any, ...], training: bool = False
) -> tuple[bool, Any]:
    module.train(training)
    try:
        with torch.no_grad():
            torch.manual_seed(2)
            return True, module(*copy.deepcopy(inputs))
    except (Exception, SystemExit):
        return False, None


def signature(output: Any) -> list[float]:
    values: list[float] = []

    def summarise(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            values.extend([float(value.double().sum()), float(value.double().abs().sum())])
        return value

    map_aggregate(output, summarise)
    return values
