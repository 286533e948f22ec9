"""A file that only builds a model at module level (``model = timm.create_model(...)``): the
model is a root of its own, reported and graphed by its global's name (``FILE::model``), its
inputs inferred from its first layer as a class's are. The models here come from a helper
module, as a library's do: the analysed file defines no class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import FileReport, ModuleReport, Span

LAYERS = """import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.stem(x).mean((2, 3)))
"""

# `model` and `stem` are models; `alias` is `model` again, `backbone` a layer of `wrapped`,
# `criterion` one of torch's layers, `blocks` a container without forward, `demo` only
# built when the file runs as a script: none of those is a root
SCRIPT = """import torch
from torch import nn

from {layers} import Tiny

model = Tiny().eval()
alias = model
criterion = nn.CrossEntropyLoss()
blocks = nn.ModuleList([nn.Linear(2, 2)])
stem: nn.Module = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
backbone = Tiny()
wrapped = nn.Sequential(backbone, nn.Identity())

if __name__ == "__main__":
    demo = Tiny()
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("global_models")
    # module names of their own: an in-process analysis imports them under these names
    layers = f"layers_{folder.name}"
    (folder / f"{layers}.py").write_text(LAYERS, encoding="utf-8")
    path = folder / f"script_{folder.name}.py"
    path.write_text(SCRIPT.format(layers=layers), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report(script: Path) -> FileReport:
    return analyze_source(str(script), script.read_text(encoding="utf-8"),
                          Settings(project=ProjectLayout(root=str(script.parent))))


def _module(report: FileReport, name: str) -> ModuleReport:
    (found,) = [m for m in report.modules if m.name == name]
    return found


def _name_span(script: Path, statement: str, name: str) -> Span:
    lines = script.read_text(encoding="utf-8").split("\n")
    line = lines.index(statement) + 1
    column = statement.index(name)
    return Span(str(script), line, line, column, column + len(name))


def test_module_level_models_are_roots_named_by_their_globals(report: FileReport,
                                                              script: Path) -> None:
    assert [m.name for m in report.modules] == ["model", "stem", "wrapped"]
    assert not report.diagnostics
    model = _module(report, "model")
    assert (model.status.value, model.entry, model.via) == ("traced", "Tiny().eval()", None)
    assert model.span == _name_span(script, "model = Tiny().eval()", "model")
    stem = _module(report, "stem")
    assert stem.span == _name_span(script, "stem: nn.Module = nn.Sequential(nn.Conv2d(3, 8, "
                                   "3), nn.ReLU())", "stem")
    assert stem.entry == "nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())"


def test_their_inputs_are_inferred_from_the_first_layer(report: FileReport) -> None:
    shapes = {n.name: n.shape for n in _module(report, "model").nodes}
    assert shapes == {"x": [2, 3, 32, 32], "stem": [2, 8, 32, 32], "mean": [2, 8],
                      "head": [2, 4], "output": [2, 4]}
    assert _module(report, "wrapped").nodes[-1].shape == [2, 4]


def test_fxls_graph_shows_a_module_level_model(script: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", f"{script.name}::model",
                           "--format", "table"], capture_output=True, text=True, timeout=240,
                          cwd=script.parent)
    assert done.returncode == 0, done.stderr
    header, _, *rows = done.stdout.splitlines()
    start, end = header.index("shape"), header.index("location")
    assert [(row.split()[0], row[start:end].strip()) for row in rows] == [
        ("x", "float32[2, 3, 32, 32]"), ("stem", "float32[2, 8, 32, 32]"),
        ("mean", "float32[2, 8]"), ("head", "float32[2, 4]"), ("output", "float32[2, 4]")]
