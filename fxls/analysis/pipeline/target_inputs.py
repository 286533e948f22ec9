"""What the export and compile tracers run: a traced class's instance and example inputs.

The inputs are those the symbolic-trace tier found (an ``args`` pragma, the root's eager
run, or inferred from the graph); a partial graph still names the consumer of each input,
which is enough to infer them: code that ``symbolic_trace`` cannot trace (a loop over a
tensor, a branch on its value) is exactly what export and compile are asked about. Inputs
the module itself cannot run on (a guess that does not fit) are no run: what export or
compile would say of them is not about the code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.inputs import infer_inputs
from fxls.analysis.pipeline.symbolic_trace import TracedModule


@dataclass(frozen=True)
class TargetRun:
    name: str
    instance: torch.nn.Module
    inputs: tuple[Any, ...]
    span: SourceSpan  # the class, where a failure with no user frame is reported


def target_run(traced: TracedModule) -> TargetRun | str:
    """The run, or why there is none (a reason the user reads)."""
    inputs = traced.captured if traced.captured is not None else traced.ctx.example_inputs
    guessed = traced.inputs_inferred
    if inputs is None and traced.ctx.graph_module is not None:
        try:
            inputs = infer_inputs(traced.ctx.graph_module)
        except Exception:
            inputs = None
    if inputs is None:
        return "not run: no example inputs (add `# fxls: args (...)` to the class)"
    if any(isinstance(value, torch.Tensor) and value.is_meta for value in inputs):
        return "not run: the instance was built on the meta device"
    if guessed and _raises_on(traced.instance, inputs):
        return ("not run: the module raises on the example inputs fxls inferred; give it "
                "some with `# fxls: args (...)`")
    return TargetRun(traced.module_report.name, traced.instance, tuple(inputs), traced.span)


def _raises_on(instance: torch.nn.Module, inputs: tuple[Any, ...]) -> bool:
    """Inferred inputs the module itself cannot run on are a guess that did not fit, not a
    failure of export or compile (inputs the user gave are theirs: what torch says of them
    is reported)."""
    try:
        with torch.no_grad():
            instance(*inputs)
    except Exception:
        return True
    return False
