"""Where an exported program's node is placed in the analysed file (``stack_spans``): a
non-strict export's stack has the line only; the expression is the one the node's torch call
names, the k-th of its name on the line for the k-th call, again for each instance of a
block; a call into a submodule is placed at that call. Checked on torch.export's own program
of the file, against the expressions' exact columns."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.target_graphs import target_graph
from fxls.project.settings import load_settings

SOURCE = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * 2 * x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return torch.sigmoid(self.blocks(x)) + torch.sigmoid(x)
"""
ROWS = SOURCE.splitlines()


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, str]]:
    """Each call node of Net's exported program: (line, the text its span covers)."""
    path = tmp_path_factory.mktemp("stack-spans") / "net.py"
    path.write_text(SOURCE, encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "net"}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    program = torch.export.export(namespace["Net"](), (torch.randn(2, 4),))
    file = SourceFile.read(str(path), SOURCE, load_settings(str(path)))
    graph = target_graph(program.graph_module, file)
    return {node.name: (node.span.line, ROWS[node.span.line - 1][node.span.col:
                                                                 node.span.end_col])
            for node in graph.nodes if node.span is not None}


def _line(fragment: str) -> int:
    return next(number for number, row in enumerate(ROWS, 1) if fragment in row)


def test_each_instance_of_a_block_line_places_its_calls_on_their_expressions(
        placed: dict[str, tuple[int, str]]) -> None:
    line = _line("return self.fc(x) * 2 * x")
    assert {name: placed[name] for name in ("linear", "mul", "mul_1", "linear_1", "mul_2",
                                            "mul_3")} == {
        "linear": (line, "self.fc(x)"), "mul": (line, "self.fc(x) * 2"),
        "mul_1": (line, "self.fc(x) * 2 * x"), "linear_1": (line, "self.fc(x)"),
        "mul_2": (line, "self.fc(x) * 2"), "mul_3": (line, "self.fc(x) * 2 * x")}


def test_two_calls_of_one_function_on_a_line_are_told_apart(
        placed: dict[str, tuple[int, str]]) -> None:
    line = _line("return torch.sigmoid(self.blocks(x))")
    assert (placed["sigmoid"], placed["sigmoid_1"], placed["add"]) == (
        (line, "torch.sigmoid(self.blocks(x))"), (line, "torch.sigmoid(x)"),
        (line, "torch.sigmoid(self.blocks(x)) + torch.sigmoid(x)"))
