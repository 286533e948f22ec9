"""What a pass did that its graph's node table does not show, read without running fxls: a
module swapped under an unchanged ``call_module`` node (``module_swaps``: another object,
differing in class or weights; a whole-model copy swaps nothing), and where a node the pass
added is drawn (``pass_placement``: the module of the node whose uses it took, else the one
its neighbours share)."""

from __future__ import annotations

import copy
from dataclasses import replace

import torch
from torch import fx, nn

from fxls.analysis.passes.module_swaps import modules_by_path, swapped_modules
from fxls.graph_view.pass_view import lens_title, pass_text
from fxls.output.pass_placement import place_added
from fxls.report import NodeInfo, PassGraphRun, PassReport

CONV = "torch.nn.modules.conv.Conv2d"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


def _traced() -> fx.GraphModule:
    return fx.symbolic_trace(nn.Sequential(Block(), Block()))


def test_a_module_put_in_place_of_another_is_a_swap_a_copy_or_an_edit_in_place_is_not() -> None:
    gm = _traced()
    before = modules_by_path(gm)
    fused = copy.deepcopy(gm.get_submodule("0.conv"))
    with torch.no_grad():
        fused.weight.mul_(2)  # folded weights
    gm.get_submodule("0").conv = fused
    gm.get_submodule("1").act = nn.GELU()  # another class, no weights
    with torch.no_grad():
        gm.get_submodule("1.conv").bias.add_(1)  # the same object, edited in place
    assert swapped_modules(before, gm, gm.graph) == {
        "0.conv": CONV, "1.act": "torch.nn.modules.activation.GELU"}
    # the tutorial's fuser copies the whole model first: only what it replaced differs
    copied = copy.deepcopy(gm)
    assert swapped_modules(modules_by_path(gm), copied, copied.graph) == {}


def test_a_pass_that_only_swaps_modules_changed_something() -> None:
    """Its graph's code reads as before: the lens and the text view say the swap."""
    code = "def forward(self, x):\n    fc = self.fc(x);  x = None\n    return fc\n"
    run = PassGraphRun("Net", before=code, after=code,
                       swapped={"fc": "torch.ao.nn.quantized.dynamic.modules.linear.Linear"})
    report = PassReport("quantize", "graph_module", runs=[run])
    assert lens_title(report) == "quantize — Net: +0 -0, 1 module swapped"
    assert "# modules swapped: fc (now Linear)" in pass_text(report).splitlines()


def _node(name: str, users: list[str], path: str | None = None, op: str = "call_function",
          target: str = "torch.relu") -> NodeInfo:
    return NodeInfo(name, op, target, "()", "{}", users, module_path=path)  # type: ignore[arg-type]


def test_an_added_node_goes_where_the_node_whose_uses_it_took_was() -> None:
    """``relu`` of ``blocks.0`` replaced by a chain ``a -> b``: ``b`` took its uses (to
    ``blocks.1``'s conv), ``a`` sits with its neighbours ``conv`` and ``b``. A node put
    between ``relu`` and ``blocks.1``'s conv took relu's uses: it is in relu's module, not
    in ``blocks``, which is all its two neighbours share."""
    conv = _node("conv", ["relu"], "blocks.0.conv", "call_module", "blocks.0.conv")
    relu = _node("relu", ["conv_1"], "blocks.0")
    conv_1 = _node("conv_1", [], "blocks.1.conv", "call_module", "blocks.1.conv")
    known = {n.name: n for n in (conv, relu, conv_1)}
    after = [replace(conv, users=["a"]), _node("a", ["b"]), _node("b", ["conv_1"]), conv_1]
    placed = {n.name: n.module_path for n in place_added(after, known, {"a", "b"})}
    assert (placed["a"], placed["b"]) == ("blocks.0", "blocks.0")
    inserted = [conv, replace(relu, users=["c"]), _node("c", ["conv_1"]), conv_1]
    placed = {n.name: n.module_path for n in place_added(inserted, known, {"c"})}
    assert placed["c"] == "blocks.0"
