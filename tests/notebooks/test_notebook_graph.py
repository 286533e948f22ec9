"""The graph of a notebook's class names the notebook's lines by cell as ``fxls check``
does (``model.ipynb:cell 3:2``): the table's locations, the JSON's ``where`` and
``cells``, the problems' messages, and on the page the node panel's source link and its
source lines, only those of the node's own cell. One analysis for the module (the table,
the JSON and the page are drawn from it)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from fxls import cli
from tests.graph_view.browser import browser, drive_steps  # noqa: F401  (the fixture)

BLOCK = """\
%matplotlib inline
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = self.proj(x)
        return torch.relu(h)
"""
NET = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def forward(self, x):
        y = self.block(x)
        return y + 1
"""
GATE = """\
class Gate(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            return y
        return -y
"""
#: cell 1 markdown, cell 2 Block, cell 3 Net, cell 4 Gate and its FX001 (1-based among all
#: cells, as ruff names them)
CELLS = [("markdown", "# A model"), ("code", BLOCK), ("code", NET), ("code", GATE)]


def _notebook(cells: list[tuple[str, str]]) -> str:
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
        "cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(True)}
                  for kind, text in cells]})


def _line_in(cell: str, text: str) -> int:
    """The 1-based line of ``text`` in ``cell``."""
    return next(n for n, line in enumerate(cell.splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``fxls graph model.ipynb::Net`` as a table, JSON and a page, and Gate's (partial, an
    FX001) as JSON and a page, on one analysis."""
    folder = tmp_path_factory.mktemp("notebook_graph")
    (folder / "model.ipynb").write_text(_notebook(CELLS), encoding="utf-8")
    analysed: list[Any] = []
    analyze_all = cli._analyze_all

    async def analyze_once(*arguments: Any) -> Any:
        if not analysed:
            analysed.append(await analyze_all(*arguments))
        return analysed[0]

    outputs = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(cli, "_analyze_all", analyze_once)
        for name, format_ in (("Net", "table"), ("Net", "json"), ("Net", "html"),
                              ("Gate", "json"), ("Gate", "html")):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                cli.main(["graph", f"model.ipynb::{name}", "--format", format_])
            outputs[format_ if name == "Net" else f"gate {format_}"] = out.getvalue()
    return folder, outputs


def test_the_table_names_each_node_s_cell_and_line(drawn):
    _folder, outputs = drawn
    header, _rule, *rows = outputs["table"].splitlines()
    column = header.index("location")
    locations = {row.split()[0]: row[column:].strip() for row in rows}
    assert locations == {
        "x": "",
        "block_proj": f"model.ipynb:cell 2:{_line_in(BLOCK, 'h = self.proj(x)')}",
        "relu": f"model.ipynb:cell 2:{_line_in(BLOCK, 'torch.relu(h)')}",
        "add": f"model.ipynb:cell 3:{_line_in(NET, 'y + 1')}",
        "output": "",
    }


def test_the_json_gives_cell_labels_and_where_code_cells_start(drawn):
    folder, outputs = drawn
    document = json.loads(outputs["json"])
    path = str(folder / "model.ipynb")
    where = {node["name"]: node.get("where") for node in document["nodes"]}
    assert where["block_proj"] == f"cell 2:{_line_in(BLOCK, 'h = self.proj(x)')}"
    assert where["add"] == f"cell 3:{_line_in(NET, 'y + 1')}"
    # line 1 is the notebook's prelude; cell 2's code starts at line 2, cell 3's after it
    assert document["cells"] == {path: [[2, 2], [3, 2 + len(BLOCK.splitlines())],
                                        [4, 2 + len(BLOCK.splitlines() + NET.splitlines())]]}
    # spans still count lines of the joined code (VS Code maps them to cells itself)
    (proj,) = [node for node in document["nodes"] if node["name"] == "block_proj"]
    assert proj["line"] == 1 + _line_in(BLOCK, "h = self.proj(x)")


def test_a_problem_says_its_cell(drawn):
    _folder, outputs = drawn
    (problem,) = json.loads(outputs["gate json"])["problems"]
    assert (problem["code"], problem["where"], problem["nodes"]) == (
        "FX001", f"cell 4:{_line_in(GATE, 'y.sum() > 0')}", ["sum_1", "gt"])


@pytest.mark.usefixtures("browser")
def test_the_node_panel_names_the_cell_and_shows_only_its_lines(drawn):
    folder, outputs = drawn
    page = folder / "model.html"
    page.write_text(outputs["html"], encoding="utf-8")
    gate = folder / "gate.html"
    gate.write_text(outputs["gate html"], encoding="utf-8")
    lines = ("[...document.querySelectorAll('#fx-source-lines .line')]"
             ".map((row) => row.textContent.trim())")
    result = drive_steps(page, [
        {"eval": "view.select(view.model.nodes.get('add'))", "as": "_"},
        {"eval": "document.getElementById('fx-node-source').textContent", "as": "addSource"},
        {"eval": lines, "as": "addLines"},
        {"eval": "view.select(view.model.nodes.get('relu'))", "as": "_"},
        {"eval": "document.getElementById('fx-node-source').textContent", "as": "reluSource"},
        {"eval": lines, "as": "reluLines"},
        {"click": "#fx-node-source"},  # in a browser the place is shown in the toolbar
        {"eval": "document.getElementById('fx-source-location').textContent",
         "as": "reluLocation"},
        {"open": str(gate), "width": 1600, "height": 1000},
        {"eval": "[...document.querySelectorAll('#fx-problems li')].map((li) => li.textContent)",
         "as": "gateProblems"},
    ])
    add = _line_in(NET, "y + 1")
    assert result["addSource"] == f"model.ipynb:cell 3:{add}"
    assert result["addLines"] == _numbered(NET, add - 2, add)
    relu = _line_in(BLOCK, "torch.relu(h)")
    assert result["reluSource"] == f"model.ipynb:cell 2:{relu}"
    # Block's last line ends cell 2: nothing of cell 3 (``class Net``) below it
    assert result["reluLines"] == _numbered(BLOCK, relu - 2, relu)
    assert result["reluLocation"] == f"{folder / 'model.ipynb'}:cell 2:{relu}"
    (problem,) = result["gateProblems"]
    assert problem.startswith(f"FX001 model.ipynb:cell 4:{_line_in(GATE, 'y.sum() > 0')} `y.sum"), \
        problem


def _numbered(cell: str, first: int, last: int) -> list[str]:
    """Lines ``first``-``last`` of ``cell`` as the panel shows them: numbered in the cell,
    their common indentation dropped."""
    lines = cell.splitlines()[first - 1:last]
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    width = len(str(last))
    return [f"{str(n).rjust(width)} {line[indent:]}".strip()
            for n, line in enumerate(lines, first)]
