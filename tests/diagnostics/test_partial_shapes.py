"""Shapes while the user fixes a trace problem: a partial graph runs on inputs inferred from
its first layer, as a complete one does, and every node before the first that cannot run has
its shape — in the node table (`fxls graph --format table`), the inlay hints and hover on a
submodule's call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from tests.lsp_client import on_the_module_server, open_and_wait

# `Net` is the plain case: everything runs, the branch as the trace took it (`block` is
# traced through: hover shows its call, not a node). In `Folded`, `len(h)` is a stand-in 1
# that makes `view` fail: its nodes before `view` have shapes, the rest none. No `args`
# pragma: the inputs are inferred from each first layer.
MODEL = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(width, width, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return y.relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.block = Block(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        h = self.stem(x)
        h = self.block(h)
        if h.sum() > 0:
            h = h * 2
        return self.head(h.mean((2, 3)))


class Folded(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        h = self.stem(x)
        t = h.view(len(h), 4, 16, 64)
        return t.relu()
"""


def _position(needle: str, offset: int = 0, after: str = "") -> types.Position:
    index = MODEL.index(needle, MODEL.index(after)) + offset
    before = MODEL[:index]
    return types.Position(before.count("\n"), index - (before.rfind("\n") + 1))


def _after_target(assignment: str, after: str = "") -> tuple[int, int]:
    """Where an inlay hint for ``assignment`` goes: right after its target's name."""
    position = _position(assignment, assignment.index(" ="), after)
    return position.line, position.character


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("partial") / "net.py"
    path.write_text(MODEL, encoding="utf-8")
    return path


def test_the_node_table_has_the_shapes_of_a_partial_graph(model_file: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", "net.py::Net", "--format",
                           "table"], capture_output=True, text=True, timeout=240,
                          cwd=model_file.parent)
    assert done.returncode == 0, done.stderr
    header, _, *rows = done.stdout.splitlines()
    start, end = header.index("shape"), header.index("location")
    shapes = {row.split()[0]: row[start:end].strip() for row in rows}
    assert shapes == {
        "x": "float32[2, 3, 32, 32]",
        "stem": "float32[2, 16, 32, 32]",
        "block_conv": "float32[2, 16, 32, 32]",
        "relu": "float32[2, 16, 32, 32]",
        "sum_1": "float32[]",
        "gt": "bool[]",
        "mul": "float32[2, 16, 32, 32]",
        "mean": "float32[2, 16]",
        "head": "float32[2, 10]",
        "output": "float32[2, 10]",
    }


@on_the_module_server
async def test_inlay_hints_and_hover_on_a_partial_graph(
        module_client: LanguageClient, own_folder: Path) -> None:
    path = own_folder / "net.py"
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(module_client, path, MODEL)
    assert sorted(d.code for d in diagnostics) == ["FX001", "FX003"]  # both partial
    uri = types.TextDocumentIdentifier(path.as_uri())
    hints = await module_client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=uri, range=types.Range(types.Position(0, 0), types.Position(100, 0))))
    labels = {(h.position.line, h.position.character): str(h.label) for h in hints}
    assert labels == {
        _after_target("y = self.conv(x)"): ": [2, 16, 32, 32]",
        _after_target("h = self.stem(x)"): ": [2, 16, 32, 32]",
        _after_target("h = self.block(h)"): ": [2, 16, 32, 32]",
        _after_target("h = h * 2"): ": [2, 16, 32, 32]",
        # Folded: the stem ran; `view` (a stand-in length) and `relu` after it could not
        _after_target("h = self.stem(x)", after="class Folded"): ": [2, 4, 32, 32]",
    }

    hover = await module_client.text_document_hover_async(types.HoverParams(
        uri, _position("self.block(h)", 6)))
    assert hover is not None
    text = hover.contents.value
    assert "submodule `block`" in text
    assert "- outputs: `relu` `float32[2, 16, 32, 32]`" in text


# 960M parameters: more than the build's memory budget, so fxls builds it on the meta device
BIG = """from torch import nn


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(8000, 60000)
        self.head = nn.Linear(60000, 10)

    def forward(self, x):
        h = self.wide(x)
        if h.sum() > 0:
            h = h.relu()
        return self.head(h)
"""


def test_a_partial_graph_built_on_the_meta_device_has_its_shapes(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("meta")
    path = folder / f"big_{folder.name}.py"  # a module name of its own: analysed in-process
    path.write_text(BIG, encoding="utf-8")
    report = analyze_source(str(path), BIG, Settings(project=ProjectLayout(root=str(folder))))
    (big,) = report.modules
    assert (big.status.value, big.entry) == ("partial", "on the meta device")
    assert {n.name: n.shape for n in big.nodes} == {
        "x": [2, 8000], "wide": [2, 60000], "sum_1": [], "gt": [], "relu": [2, 60000],
        "head": [2, 10], "output": [2, 10]}
