"""The graph page's group panel (issue 36, "Modules first-class"): a module's class and where
it is defined (the document's ``groups[].defined``: the user's file for its own classes,
torch's or timm's for theirs), the shapes entering and leaving it, its nodes by op, and the
siblings whose structure is its own ("same as blocks.1-2"), marked on their closed boxes."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from fxls.graph_view.module_graph import graph_page
from tests.graph_view.browser import browser, drive_steps  # noqa: F401
from tests.graph_view.pages import ZOO_SITE, vit_page

NET = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block(), Block())
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.blocks(x))
"""

#: the panel's rows, each as its cells' text
PANEL = ("[...document.querySelectorAll('#fx-panel tr')]"
         ".map((r) => [...r.cells].map((c) => c.textContent))")
#: the badge's count is this sign and a number
TIMES = "\N{MULTIPLICATION SIGN}"


def _fxls_graph(folder: Path, target: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", target, "--format", "json"],
                          capture_output=True, text=True, timeout=600, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _class_line(path: Path, header: str) -> int:
    return path.read_text(encoding="utf-8").splitlines().index(header) + 1


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``net.py`` and its graph document (one ``fxls graph`` for the module)."""
    folder = tmp_path_factory.mktemp("group_panel")
    (folder / "net.py").write_text(NET, encoding="utf-8")
    return folder, _fxls_graph(folder, "net.py::Net")


def test_each_group_says_where_its_class_is_defined(net: tuple[Path, dict[str, Any]]) -> None:
    folder, document = net
    user = str(folder / "net.py")
    linear = {"file": inspect.getsourcefile(torch.nn.Linear),
              "line": inspect.getsourcelines(torch.nn.Linear)[1]}
    sequential = {"file": inspect.getsourcefile(torch.nn.Sequential),
                  "line": inspect.getsourcelines(torch.nn.Sequential)[1]}
    block = {"file": user, "line": _class_line(folder / "net.py", "class Block(nn.Module):")}
    assert {g["path"]: g["defined"] for g in document["groups"]} == {
        "blocks": sequential,
        "blocks.0": block, "blocks.1": block, "blocks.2": block,
        "blocks.0.fc": linear, "blocks.1.fc": linear, "blocks.2.fc": linear,
        "head": linear,
    }


@pytest.mark.usefixtures("browser")
def test_group_panel_and_identical_siblings(net: tuple[Path, dict[str, Any]]) -> None:
    folder, document = net
    page = folder / "net.html"
    page.write_text(graph_page(document), encoding="utf-8")
    result = drive_steps(page, [
        # a graph this small opens whole: the blocks closed, as on a large one
        {"eval": "['blocks.0', 'blocks.1', 'blocks.2'].map((p) => view.setExpanded(p, false))",
         "as": "closed"},
        {"boxes": ".group.collapsed .same-badge", "as": "badges"},
        # styled by class: VS Code's webview refuses style attributes
        {"eval": "['rect', 'text'].map((part) => "
                 "getComputedStyle(document.querySelector(`.same-badge ${part}`)).fill)",
         "as": "badgeFill"},
        {"eval": "view.select(view.groupOf('blocks.0'))", "as": "_"},
        {"eval": PANEL, "as": "panel"},
        {"click": "#fx-group-defined"},
        {"eval": "document.getElementById('fx-source-location').textContent", "as": "location"},
        {"eval": "view.select(view.groupOf('blocks'))", "as": "_"},
        {"eval": PANEL, "as": "outer"},
    ])
    # each closed block carries the mark: three the same
    assert sorted((b["id"], b["text"]) for b in result["badges"]) == [
        ("g:blocks.0", f"same as blocks.1-2{TIMES}3"),
        ("g:blocks.1", f"same as blocks.0, 2{TIMES}3"),
        ("g:blocks.2", f"same as blocks.0-1{TIMES}3")]
    assert result["badgeFill"] == ["rgb(71, 85, 105)", "rgb(255, 255, 255)"]
    line = _class_line(folder / "net.py", "class Block(nn.Module):")
    assert result["panel"] == [
        ["module", "net.Block"],
        ["defined at", f"net.py:{line}"],
        ["nodes", "3"],
        ["by op", "call_function 2, call_module 1"],
        ["inputs", "x float32[2, 8]"],
        ["outputs", "add float32[2, 8]"],
        ["same as", "blocks.1-2"],
    ]
    # in a browser, the place is shown whole (in VS Code the link opens the file)
    assert result["location"] == f"{folder / 'net.py'}:{line}"
    outer = dict(tuple(row) for row in result["outer"])
    assert outer["defined at"] == f"container.py:{inspect.getsourcelines(torch.nn.Sequential)[1]}"
    assert (outer["inputs"], outer["outputs"]) == ("x float32[2, 8]", "add_2 float32[2, 8]")
    assert "same as" not in outer


@pytest.mark.usefixtures("browser")
def test_vit_blocks_are_the_same_as_each_other(tmp_path: Path,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    page = tmp_path / "vit.html"  # the run's shared page, driven from a folder of this test's
    shutil.copy(vit_page(tmp_path_factory), page)
    shot = tmp_path / "graph-group-panel.png"  # as docs/images/graph-group-panel.png
    result = drive_steps(page, [
        {"eval": "view.model.doc.groups.find((g) => g.path === 'vit.blocks.0').defined",
         "as": "defined"},
        {"eval": "view.setExpanded('vit.blocks', true)", "as": "opened"},
        {"eval": "view.select(view.groupOf('vit.blocks.0'))", "as": "_"},
        {"eval": PANEL, "as": "panel"},
        {"boxes": ".group.collapsed .same-badge", "as": "badges"},
        # the blocks near enough to read their marks
        {"eval": "(() => { const b = view.scene.boxes.get('g:vit.blocks.0'); "
                 "view.setTransform({k: 1.5, tx: 420 - 1.5 * b.x, ty: 200 - 1.5 * b.y}); })()",
         "as": "_"},
        {"screenshot": str(shot)},
    ])
    defined = result["defined"]
    assert defined["file"] == str(ZOO_SITE / "timm/models/vision_transformer.py")
    timm_lines = Path(defined["file"]).read_text(encoding="utf-8").splitlines()
    assert timm_lines[defined["line"] - 1].startswith("class Block(")
    panel = dict(tuple(row) for row in result["panel"])
    assert panel["module"] == "timm.models.vision_transformer.Block"
    assert panel["defined at"] == f"vision_transformer.py:{defined['line']}"
    assert panel["same as"] == "vit.blocks.1-11"
    assert panel["inputs"].endswith(" float32[1, 197, 768]")
    assert panel["outputs"].endswith(" float32[1, 197, 768]")
    assert {b["id"] for b in result["badges"]} >= {f"g:vit.blocks.{i}" for i in range(12)}
    assert shot.stat().st_size > 10_000
