"""A class whose blocks a model of the file uses is traced with what the model's trace
gives them: a list or dict of tensors is a Python container there (HRNet's branches, a
detection head's feature maps), as ``concrete_args`` with ``PH`` leaves give it to
torch.fx. Traced with one input for the whole list, ``x[i] = branch(x[i])`` and ``for f in
x`` were problems (FX004, FX002) the model never has."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.fx

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings

SOURCE = '''from typing import Dict, List

import torch
from torch import nn


class Branches(nn.Module):
    def __init__(self, width: int = 4, count: int = 2):
        super().__init__()
        self.branches = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(count))

    def forward(self, x: List[torch.Tensor]) -> List[torch.Tensor]:
        for i, branch in enumerate(self.branches):
            x[i] = branch(x[i])
        return x


class Head(nn.Module):
    def __init__(self, width: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(width, 1, 1)

    def forward(self, features: Dict[str, torch.Tensor]) -> torch.Tensor:
        scores = [self.conv(f).flatten(1) for f in features.values()]
        return torch.cat(scores, dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.branches = Branches()
        self.head = Head()

    def forward(self, image):
        x = self.stem(image)
        low, high = self.branches([x, x * 2])
        return self.head({"low": low, "high": high})


def net():
    return Net()
'''


def _report(tmp_path: Path):
    path = tmp_path / f"given_{tmp_path.name}.py"
    path.write_text(SOURCE, encoding="utf-8")
    return analyze_source(str(path), SOURCE, Settings(project=ProjectLayout(root=str(tmp_path))))


def test_blocks_are_traced_with_the_containers_their_model_gives_them(tmp_path: Path) -> None:
    report = _report(tmp_path)
    modules = {m.name: m for m in report.modules}
    assert report.diagnostics == []
    for name in ("Branches", "Head"):
        assert modules[name].status.value == "traced", name
    # torch.fx, given the same structure, traces them to as many nodes
    namespace: dict = {}
    exec(compile(SOURCE, "given.py", "exec"), namespace)
    branches, head = namespace["Branches"](), namespace["Head"]()
    reference = {
        "Branches": torch.fx.symbolic_trace(
            branches, concrete_args={"x": [torch.fx._symbolic_trace.PH] * 2}),
        "Head": torch.fx.symbolic_trace(head, concrete_args={
            "features": {"low": torch.fx._symbolic_trace.PH,
                         "high": torch.fx._symbolic_trace.PH}}),
    }
    for name, traced in reference.items():
        assert modules[name].node_count == len(traced.graph.nodes), name


def test_without_the_model_a_block_is_traced_as_torch_fx_would(tmp_path: Path) -> None:
    """The file's own Branches, with no model around it: one input for the list, and the
    item assignment torch.fx's symbolic_trace fails on too."""
    alone = SOURCE.split("class Head(")[0]
    path = tmp_path / f"alone_{tmp_path.name}.py"
    path.write_text(alone, encoding="utf-8")
    report = analyze_source(str(path), alone, Settings(project=ProjectLayout(root=str(tmp_path))))
    assert [d.code for d in report.diagnostics] == ["FX004"]
    assert "does not support item assignment" in report.diagnostics[0].message
