"""ShapeProp's constructor and errors, differential against torch.fx.

``ShapeProp(gm=..., fake_mode=...)``: the module is passed as ``gm`` (also by keyword) and a
FakeTensorMode given to it runs the graph on fake tensors.
A node that fails is reported as ``RuntimeError("ShapeProp error for: node=...")``.
"""

from __future__ import annotations

import operator
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.fx
import torch.fx.passes.shape_prop
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

import fxcore
import fxcore.passes.shape_prop

LIBS = pytest.mark.parametrize("lib", [torch.fx, fxcore], ids=["torch.fx", "fxcore"])


def shape_prop_class(lib: ModuleType) -> Any:
    return lib.passes.shape_prop.ShapeProp


class ConvHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(self.conv(x).mean(dim=(2, 3))).relu()


def shapes(gm: Any) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    return {
        n.name: (tuple(n.meta["tensor_meta"].shape), n.meta["tensor_meta"].dtype)
        for n in gm.graph.nodes
        if "tensor_meta" in n.meta
    }


def propagate_with_fake_mode(lib: ModuleType, how: str) -> tuple[Any, Any]:
    gm = lib.symbolic_trace(ConvHead())
    fake_mode = FakeTensorMode()
    if how == "keyword":
        prop = shape_prop_class(lib)(gm=gm, fake_mode=fake_mode)
    else:
        prop = shape_prop_class(lib)(gm, fake_mode)
    return gm, prop.propagate(torch.randn(2, 3, 8, 8))


@pytest.mark.parametrize("how", ["keyword", "positional"])
def test_fake_mode_propagates_on_fake_tensors_like_torch_fx(how: str) -> None:
    theirs, theirs_out = propagate_with_fake_mode(torch.fx, how)
    ours, ours_out = propagate_with_fake_mode(fxcore, how)
    assert isinstance(theirs_out, FakeTensor) and isinstance(ours_out, FakeTensor)
    assert ours_out.shape == theirs_out.shape == (2, 2)
    assert shapes(ours) == shapes(theirs)
    assert set(shapes(ours)) == {"x", "conv", "mean", "lin", "relu", "output"}


@LIBS
def test_fake_mode_leaves_the_real_module_untouched(lib: ModuleType) -> None:
    model = ConvHead()
    gm = lib.symbolic_trace(model)
    before = gm.conv.weight.detach().clone()
    prop = shape_prop_class(lib)(gm, fake_mode=FakeTensorMode())
    prop.propagate(torch.randn(1, 3, 6, 6))
    assert prop.module is gm
    assert not isinstance(gm.conv.weight, FakeTensor)
    assert torch.equal(gm.conv.weight, before)
    assert prop.fake_module is not None and prop.fake_module is not gm


@LIBS
def test_without_fake_mode_the_attributes_are_none(lib: ModuleType) -> None:
    gm = lib.symbolic_trace(ConvHead())
    prop = shape_prop_class(lib)(gm)
    assert prop.fake_mode is None and prop.fake_module is None
    assert prop.real_module is gm


def failing_graph_module(lib: ModuleType) -> Any:
    g = lib.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    g.output(g.call_function(operator.add, (x, y)))
    return lib.GraphModule(nn.Module(), g)


def test_a_failing_node_is_a_shape_prop_error_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    messages = []
    for lib in (torch.fx, fxcore):
        prop = shape_prop_class(lib)(failing_graph_module(lib))
        with pytest.raises(RuntimeError, match=r"^ShapeProp error for: node=") as caught:
            prop.propagate(torch.ones(2), torch.ones(3))
        assert isinstance(caught.value.__cause__, RuntimeError)
        assert "size of tensor a (2)" in str(caught.value.__cause__)
        messages.append(str(caught.value).split(" with meta=")[0])
        assert "Traceback" in capsys.readouterr().err  # printed, as torch.fx does
    assert messages[0] == messages[1]
    assert messages[1] == (
        "ShapeProp error for: node=%add : [num_users=1] = "
        "call_function[target=operator.add](args = (%x, %y), kwargs = {})"
    )


@LIBS
def test_the_fake_mode_of_an_active_tracing_context_is_used(lib: ModuleType) -> None:
    gm = lib.symbolic_trace(ConvHead())
    fake_mode = FakeTensorMode()
    with torch._guards.tracing(torch._guards.TracingContext(fake_mode)):
        prop = shape_prop_class(lib)(gm)
    assert prop.fake_mode is fake_mode
    out = prop.propagate(torch.randn(1, 3, 6, 6))
    assert isinstance(out, FakeTensor) and out.shape == (1, 2)


def test_a_subclass_can_take_node_errors_as_raised(capsys: pytest.CaptureFixture[str]) -> None:
    class Quiet(fxcore.passes.shape_prop.ShapeProp):
        wrap_node_errors = False

    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\)"):
        Quiet(failing_graph_module(fxcore)).propagate(torch.ones(2), torch.ones(3))
    assert capsys.readouterr().err == ""
