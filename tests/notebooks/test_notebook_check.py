"""`fxls check` on notebooks: found in folders like `.py` files, code cells analysed in order
as one source (IPython's lines without effect), every diagnostic in its cell in text, JSON and
SARIF, pragmas in cells, a malformed notebook one FX100 (real worker, one analysis for the
module: the three formats print the same reports)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from fxls import cli

BLOCK = """\
%matplotlib inline
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        print('block')
        return torch.relu(self.proj(x))"""
GATE = """\
!pip install timm
class Gate(nn.Module):
    def forward(self, x):
        print(x)  # fxls: ignore[FX013]
        if x.sum() > 0:
            return x
        return -x
"""
NET = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def forward(self, x):
        return self.block(x)


net = Net()
for _ in range(2):
    %time net(torch.randn(2, 8))"""
BASH = "%%bash\necho $((1 + 2))\nexit 1\n"
LAST = '''\
files = !ls
display(net)
net?
TEMPLATE = """
%d items
!done
"""
assert TEMPLATE.split("\\n") == ["", "%d items", "!done", ""], "a line in a string changed"


class Base(nn.Module):
    def __init__(self, num_anchors, min_size):
        super().__init__()
        self.head = nn.Conv2d(min_size, num_anchors * 4, 1)

    def forward(self, x):
        return self.head(x)


class Scaled(Base):
    def __init__(self, scale=2.0, **kwargs):  # arguments inferred from the cell's source
        super().__init__(**kwargs)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale


class Sized(nn.Module):
    def __init__(self, classes):
        super().__init__()
        assert classes % 11 == 0, 'classes: a multiple of 11'
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(x)
'''
CELLS = [("markdown", "# A model in a notebook"), ("code", BLOCK), ("code", GATE),
         ("code", NET), ("code", BASH), ("markdown", "Done."), ("code", LAST)]
MISSING_COMMA = '{"cells": [\n  {"cell_type": "code" "source": []}\n]}\n'


def _notebook(cells: list[tuple[str, str]], metadata: dict[str, Any] | None = None) -> str:
    """nbformat 4 as Jupyter writes it: each source a list of lines."""
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": metadata if metadata is not None else {"language_info": {"name": "python"}},
        "cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(True),
                   **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                  for kind, text in cells],
    }, indent=1)


FILES = {  # nbs/ is a folder to walk, gate.ipynb a notebook named on the command line
    "nbs/model.ipynb": _notebook(CELLS),
    "nbs/broken.ipynb": MISSING_COMMA,
    "nbs/no_cells.ipynb": '{"nbformat": 4}\n',
    "nbs/r_kernel.ipynb": _notebook([("code", "x <- 1")], {"kernelspec": {"language": "R"}}),
    "nbs/.ipynb_checkpoints/model-checkpoint.ipynb": _notebook(CELLS),
    "gate.ipynb": _notebook([("code", "import torch\nfrom torch import nn\n" + GATE)]),
}


@dataclass(frozen=True)
class Run:
    status: int
    stdout: str
    stderr: str


def _run(arguments: list[str]) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(arguments)
    return Run(status, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """``fxls check --format F nbs gate.ipynb`` for each format (and JSON with
    ``--statistics``), on one analysis."""
    folder = tmp_path_factory.mktemp("notebooks")
    for name, text in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    analysed: list[Any] = []
    analyze_many = cli.analyze_many

    async def analyze_once(requests: list[Any], **options: Any) -> Any:
        if not analysed:
            analysed.append(await analyze_many(requests, **options))
        return analysed[0]

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setattr(cli, "analyze_many", analyze_once)
        runs = {format_: _run(["check", "--no-progress", "--format", format_, "nbs",
                               "gate.ipynb"]) for format_ in ("json", "text", "sarif")}
        runs["statistics"] = _run(["check", "--no-progress", "--statistics", "--format", "json",
                                   "nbs", "gate.ipynb"])
        return runs


def _in_cell(cell: str, text: str) -> tuple[int, int, int]:
    """0-based line and columns of ``text`` in ``cell``."""
    for number, line in enumerate(cell.split("\n")):
        if text in line:
            return number, line.index(text), line.index(text) + len(text)
    raise AssertionError(f"{text!r} is not in the cell")


PRINT = _in_cell(BLOCK, "print('block')")
CONDITION = _in_cell(GATE, "x.sum() > 0")
SIZED = _in_cell(LAST, "Sized")
ASSERT = _in_cell(LAST, "assert classes")
_SOURCE_KEY = _in_cell(MISSING_COMMA, '"source"')
JSON_ERROR = (_SOURCE_KEY[0], _SOURCE_KEY[1], _SOURCE_KEY[1] + 1)  # the character JSON stops at


def _files(runs: dict[str, Run]) -> dict[str, dict[str, Any]]:
    return {entry["path"]: entry for entry in json.loads(runs["json"].stdout)["files"]}


def test_notebooks_in_a_folder_are_checked_and_a_malformed_one_is_an_error(runs):
    assert list(_files(runs)) == ["nbs/broken.ipynb", "nbs/model.ipynb",
                                  "nbs/no_cells.ipynb", "gate.ipynb"]
    assert runs["json"].status == 1
    assert "fxls: nbs/r_kernel.ipynb: skipped: a notebook in R, not Python" in \
        runs["json"].stderr


INFERRED = "num_anchors=32, min_size=32"


def test_modules_of_every_cell_are_analysed_as_jupyter_runs_them(runs):
    modules = {m["name"]: (m["status"], m["entry"]) for m in _files(runs)["nbs/model.ipynb"]
               ["modules"]}
    # Block (cell 2) is built by Net (cell 4); Scaled's arguments are read from its cell
    assert modules == {"Block": ("traced", "Block(8) (cell 4:4)"), "Gate": ("partial", None),
                       "Net": ("traced", None),
                       "Base": ("traced", f"Base({INFERRED}), arguments inferred from their use"),
                       "Scaled": ("traced",
                                  f"Scaled({INFERRED}), arguments inferred from their use"),
                       "Sized": ("skipped", None)}


def _diagnostic(code: str, cell: int, where: tuple[int, int, int], **more: Any) -> dict:
    line, start, end = where
    return {"code": code, "cell": cell, **more,
            "range": {"start": {"line": line, "character": start},
                      "end": {"line": line, "character": end}}}


def test_json_gives_each_diagnostic_its_cell_and_range_in_it(runs):
    found = [{k: d[k] for k in ("code", "cell", "range", "module")}
             for d in _files(runs)["nbs/model.ipynb"]["diagnostics"]]
    # no FX100: the magics, shell lines and the %%bash cell had no effect; Gate's print is
    # ignored by its pragma
    assert found == [_diagnostic("FX013", 1, PRINT, module="Block"),
                     _diagnostic("FX001", 2, CONDITION, module="Gate"),
                     _diagnostic("FX101", 6, SIZED, module="Sized")]


def test_text_names_the_cell_as_ruff_does(runs):
    located = [re.match(r".+?: FX\d{3}", line).group() for line in runs["text"].stdout
               .splitlines()]
    assert located == [
        f"nbs/broken.ipynb:{JSON_ERROR[0] + 1}:{JSON_ERROR[1] + 1}: FX100",
        f"nbs/model.ipynb:cell 2:{PRINT[0] + 1}:{PRINT[1] + 1}: FX013",
        f"nbs/model.ipynb:cell 3:{CONDITION[0] + 1}:{CONDITION[1] + 1}: FX001",
        f"nbs/model.ipynb:cell 7:{SIZED[0] + 1}:{SIZED[1] + 1}: FX101",
        "nbs/no_cells.ipynb:1:1: FX100",
        f"gate.ipynb:cell 1:{CONDITION[0] + 3}:{CONDITION[1] + 1}: FX001",
    ]


def test_sarif_regions_are_in_the_cell_its_location_names(runs):
    results = json.loads(runs["sarif"].stdout)["runs"][0]["results"]
    locations = [(r["ruleId"], r["locations"][0]["physicalLocation"]) for r in results]
    line, start, end = CONDITION
    assert locations[2] == ("FX001", {
        "artifactLocation": {"uri": "nbs/model.ipynb"},
        "region": {"startLine": line + 1, "startColumn": start + 1, "endLine": line + 1,
                   "endColumn": end + 1},
        "properties": {"cell": 2}})
    assert [(rule, where.get("properties")) for rule, where in locations] == [
        ("FX100", None), ("FX013", {"cell": 1}), ("FX001", {"cell": 2}),
        ("FX101", {"cell": 6}), ("FX100", None), ("FX001", {"cell": 0})]


def test_a_malformed_notebook_is_one_fx100_where_it_breaks(runs):
    files = _files(runs)
    line, start, end = JSON_ERROR
    assert files["nbs/broken.ipynb"]["diagnostics"] == [{
        "code": "FX100", "severity": "error", "module": None,
        "message": "the notebook is not valid JSON: Expecting ',' delimiter",
        "range": {"start": {"line": line, "character": start},
                  "end": {"line": line, "character": end}}}]
    (no_cells,) = files["nbs/no_cells.ipynb"]["diagnostics"]
    assert (no_cells["code"], no_cells["message"], no_cells["range"]["start"]) == (
        "FX100", "the notebook has no list of `cells`", {"line": 0, "character": 0})


def test_lines_a_message_names_are_in_their_cells(runs):
    (sized,) = [line for line in runs["text"].stdout.splitlines() if " FX101 " in line]
    assert f" at model.ipynb:cell 7:{ASSERT[0] + 1} (`assert classes % 11 == 0, " in sized


def test_statistics_name_the_cell_of_a_class_not_traced(runs):
    not_traced = json.loads(runs["statistics"].stdout)["statistics"]["not_traced"]
    assert [(item["path"], item["module"], item.get("cell"), item["line"])
            for item in not_traced] == [("nbs/broken.ipynb", None, None, JSON_ERROR[0] + 1),
                                        ("nbs/model.ipynb", "Sized", 6, SIZED[0] + 1),
                                        ("nbs/no_cells.ipynb", None, None, 1)]
    assert f" at model.ipynb:cell 7:{ASSERT[0] + 1} (`assert" in not_traced[1]["reason"]
