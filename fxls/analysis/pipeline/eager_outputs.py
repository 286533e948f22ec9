"""What a module computes eagerly on the inputs the export and compile tiers run it on, in a
few numbers (``ModuleReport.eager_outputs``): a quick fix of an export or compile problem
is offered only if the edited module computes the same (``fxls.fixes.verify_targets``).

Symbolic tracing's ``output_signature`` cannot say it: the modules these fixes are for are
the ones its graph is partial for, or that do not target it at all.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from fxls.analysis.pipeline.target_inputs import TargetRun


def eager_outputs(run: TargetRun) -> list[float] | None:
    """Per output tensor: its element count, how many are not finite, the sum and the sum
    of absolute values of the others (every dtype); a number output as itself. None when
    the module raises on the inputs."""
    try:
        return [number for leaf in tree_leaves(run.call_eagerly()) for number in _summary(leaf)]
    except (Exception, SystemExit):  # the user's code on its inputs: nothing to compare
        return None


def _summary(value: Any) -> list[float]:
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.is_complex():
            tensor = torch.view_as_real(tensor)
        tensor = tensor.to(torch.float64)
        finite = tensor[torch.isfinite(tensor)]
        return [float(tensor.numel()), float(tensor.numel() - finite.numel()),
                float(finite.sum()), float(finite.abs().sum())]
    if isinstance(value, bool | int | float) and abs(float(value)) < float("inf"):
        return [float(value)]
    return []
