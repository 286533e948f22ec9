"""A call's arguments by parameter name: computed in the analysis, shown by hover."""

from __future__ import annotations

from pathlib import Path

import torch

import fxcore
from fxls.analysis.named_args import named_arguments
from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import JobLimits, ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import source_text
from fxls.report import ModuleReport, NodeInfo, check_report
from fxls.server.hover import node_markdown


class _Calls(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = torch.add(x, y, alpha=2)
        b = x.add(3)
        c = torch.nn.functional.gelu(a, approximate="tanh")
        d = self.lin(c)
        e = torch.cat([a, b], dim=0)
        f = torch.sum(e, 1, keepdim=True)
        return d + f


def _named(gm: fxcore.GraphModule) -> dict[str, list[tuple[str, str]] | None]:
    return {node.name: named_arguments(node, gm) for node in gm.graph.nodes}


def test_only_the_passed_arguments_are_named_in_parameter_order() -> None:
    named = _named(fxcore.symbolic_trace(_Calls()))
    assert named["add"] == [("input", "%x"), ("other", "%y"), ("alpha", "2")]
    assert named["gelu"] == [("input", "%add"), ("approximate", "tanh")]
    assert named["cat"] == [("tensors", "[%add, %add_1]"), ("dim", "0")]
    assert named["sum_1"] == [("input", "%cat"), ("dim", "1"), ("keepdim", "True")]


def test_a_method_names_its_tensor_self_and_a_module_its_forward_parameters() -> None:
    named = _named(fxcore.symbolic_trace(_Calls()))
    assert named["add_1"] == [("self", "%x"), ("other", "3")]
    assert named["lin"] == [("input", "%gelu")]


def test_operators_placeholders_and_the_output_are_not_named() -> None:
    named = _named(fxcore.symbolic_trace(_Calls()))
    assert named["add_2"] is None  # d + f
    assert named["x"] is None and named["output"] is None


def test_a_user_module_is_named_by_its_forward_signature() -> None:
    class Block(torch.nn.Module):
        def forward(self, hidden: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            return hidden * scale

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.block(x, scale=0.5)

    class KeepBlock(fxcore.Tracer):
        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    outer = Outer()
    gm = fxcore.GraphModule(outer, KeepBlock().trace(outer))
    assert _named(gm)["block"] == [("hidden", "%x"), ("scale", "0.5")]


MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
"""


def test_the_report_carries_them_and_hover_shows_them(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    report = analyze_source(str(path), MODEL,
                            Settings(project=ProjectLayout(root=str(tmp_path)),
                                     limits=JobLimits(timeout=30)))
    module = next(m for m in report.modules if m.name == "Net")
    clamp = next(n for n in module.nodes if n.name == "clamp")
    assert clamp.named_args == [["input", "%x"], ["min", "0.0"]]
    sent = check_report(report.to_dict(), path=str(path), text=source_text(MODEL)).report
    sent_module = next(m for m in sent.modules if m.name == "Net")
    sent_clamp = next(n for n in sent_module.nodes if n.name == "clamp")
    assert sent_clamp.named_args == clamp.named_args
    text = node_markdown(module, clamp)
    assert "- args: `input=%x`, `min=0.0`" in text
    assert "- kwargs:" not in text


def test_hover_without_names_keeps_args_and_kwargs() -> None:
    module = ModuleReport(name="Net", status="traced")
    node = NodeInfo("add", "call_function", "operator.add", "(%x, 1)", "{}", [])
    text = node_markdown(module, node)
    assert "- args: `(%x, 1)`" in text
