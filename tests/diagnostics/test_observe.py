"""observe(): a graph that fails on the example inputs reports the error its code raised."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import fxcore
from fxls.analysis.observe import observe


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def test_the_error_is_the_one_raised_not_shape_props_wrapper(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen = observe(fxcore.symbolic_trace(Head()), (torch.randn(3, 5),), record_backward=True)
    assert not seen.ok
    assert seen.error == "RuntimeError: mat1 and mat2 shapes cannot be multiplied (3x5 and 4x2)"
    assert capsys.readouterr().err == ""
