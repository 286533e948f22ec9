"""The CLI on FX passes: pass keys in JSON and SARIF, pass counts in ``--statistics``, and
``fxls graph FILE::<pass>`` (the before/after view) in every format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fxls import cli
from fxls.output.pass_nodes import after_graph, removed_nodes
from fxls.report import (
    FileReport,
    ModuleReport,
    NodeInfo,
    NodeOp,
    PassGraphRun,
    PassReport,
    Span,
)
from tests.passes.samples import PASSES

LINES = PASSES.splitlines()
NEG_LINE = LINES.index("                neg = gm.graph.call_function(torch.neg, (node,))") + 1
GELU_LINE = next(i for i, line in enumerate(LINES, 1) if "functional.gelu" in line)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("passes")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\n", encoding="utf-8")
    (folder / "passes.py").write_text(PASSES, encoding="utf-8")
    return folder


def _fxls(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "fxls", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=folder)


@pytest.fixture(scope="module")
def check_json(folder: Path) -> dict:
    done = _fxls(folder, "check", "--no-progress", "--statistics", "--format", "json",
                 "passes.py")
    assert done.returncode == 1, done.stderr  # the FX005 in negate_after_relu
    return json.loads(done.stdout)


def test_pass_diagnostics_name_their_pass_and_graph(check_json: dict) -> None:
    (entry,) = check_json["files"]
    found = {(d["code"], d.get("pass"), d.get("graph"), d["range"]["start"]["line"])
             for d in entry["diagnostics"]}
    assert ("FX005", "negate_after_relu", "Net", NEG_LINE - 1) in found
    assert any(code == "FX017" and name == "relu_to_gelu" and graph == "Net"
               for code, name, graph, _ in found)


def test_file_entries_list_their_passes_with_counts(check_json: dict) -> None:
    passes = {p["name"]: p for p in check_json["files"][0]["passes"]}
    assert set(passes) == {"negate_after_relu", "relu_to_gelu"}
    gelu = passes["relu_to_gelu"]
    assert gelu["kind"] and gelu["graphs_from"] == "models"
    assert gelu["runs"] == [{"graph": "Net", "added": 1, "removed": 1, "rewired": 1,
                             "problem": None}]
    (negate,) = passes["negate_after_relu"]["runs"]
    assert (negate["added"], negate["removed"]) == (1, 0)
    assert "before it is defined" in negate["problem"]


def test_json_statistics_count_passes_runs_and_problems(check_json: dict) -> None:
    statistics = check_json["statistics"]["passes"]
    assert {k: statistics[k] for k in ("found", "run", "runs", "with_problems")} == {
        "found": 2, "run": 2, "runs": 2, "with_problems": 1}
    (problem,) = statistics["problems"]
    assert (problem["pass"], problem["graph"], problem["path"]) == (
        "negate_after_relu", "Net", "passes.py")
    assert check_json["statistics"]["files"][0]["passes"]["runs"] == 2


def test_text_statistics_and_sarif_properties(folder: Path) -> None:
    done = _fxls(folder, "check", "--no-progress", "--statistics", "passes.py")
    lines = done.stdout.splitlines()
    assert "2 FX passes: 2 runs on graphs, 1 with problems" in lines
    problems = lines[lines.index("Passes with problems:") + 1]
    assert problems.startswith("  passes.py:15 negate_after_relu on Net: node `neg` uses")

    sarif = json.loads(_fxls(folder, "check", "--format", "sarif", "passes.py").stdout)
    properties = [r.get("properties") for r in sarif["runs"][0]["results"]]
    assert {"pass": "negate_after_relu", "graph": "Net"} in properties


def test_graph_code_is_a_diff_per_graph(folder: Path) -> None:
    done = _fxls(folder, "graph", "passes.py::negate_after_relu")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "--- Net (before)" in lines and "+++ Net (after `negate_after_relu`)" in lines
    assert "+    neg = torch.neg(relu);  relu = None" in lines
    assert "-    return relu" in lines and "+    return neg" in lines
    assert "     lin = self.lin(x);  x = None" in lines  # unchanged: context


def test_graph_table_marks_added_rewired_and_removed_nodes(folder: Path) -> None:
    done = _fxls(folder, "graph", "passes.py::relu_to_gelu", "--format", "table")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "# Net after `relu_to_gelu`: +1 -1, 1 rewired"
    rows = [line.split() for line in lines[3:]]
    assert [row[0] for row in rows] == ["x", "lin", "+", "~", "-"]
    assert rows[2][1:3] == ["gelu", "call_function"] and rows[2][-1] == str(GELU_LINE)
    assert rows[3][1] == "output" and rows[4][1] == "relu"

    negate = _fxls(folder, "graph", "passes.py::negate_after_relu", "--format", "table")
    lines = negate.stdout.splitlines()
    assert lines[1].startswith("# problem: node `neg` uses `relu` before it is defined")
    rows = lines[4:]  # the graph in the (wrong) order the pass left it
    assert [(row[0], row.split()[-1] if row[0] == "+" else row.split()[0]) for row in rows][:3] \
        == [(" ", "x"), (" ", "lin"), ("+", f"{NEG_LINE},{NEG_LINE + 1},{NEG_LINE + 2}")]
    assert [row[0] for row in rows] == [" ", " ", "+", " ", "~"]
    assert rows[2].split()[1] == "neg" and rows[3].split()[0] == "relu"


def test_graph_json_has_the_runs_with_before_and_after(folder: Path) -> None:
    done = _fxls(folder, "graph", "passes.py::negate_after_relu", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["name"] == "negate_after_relu" and document["status"] == "problem"
    (run,) = document["runs"]
    assert (run["graph"], run["added"], run["removed"], run["rewired"]) == (
        "Net", ["neg"], [], ["output"])
    assert "return relu" in run["before"] and "return neg" in run["after"]
    marks = {node["name"]: node["mark"] for node in run["nodes"]}
    assert marks == {"x": " ", "lin": " ", "neg": "+", "relu": " ", "output": "~"}
    relu = next(node for node in run["nodes"] if node["name"] == "relu")
    assert relu["users"] == ["neg"]  # as wired after the pass, not before


def test_graph_dot_highlights_added_nodes_and_draws_removed_ones(folder: Path) -> None:
    done = _fxls(folder, "graph", "passes.py::relu_to_gelu", "--format", "dot")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith('digraph "relu_to_gelu" {') and text.rstrip().endswith("}")
    gelu = next(line for line in text.splitlines() if line.strip().startswith('"0:gelu"'))
    assert "fillcolor" in gelu
    assert '"0:relu(removed)"' in text and "dashed" in text
    assert '"0:lin" -> "0:gelu";' in text and '"0:gelu" -> "0:output";' in text


def test_graph_html_is_the_graph_views_before_after_page(folder: Path) -> None:
    """The page itself is driven in a browser by tests/passes/test_pass_page.py."""
    done = _fxls(folder, "graph", "passes.py::negate_after_relu", "--format", "html")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>") and "<title>negate_after_relu: FX pass, before " \
        "and after</title>" in page
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page), "nothing loaded"
    data = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                     page, re.S)
    assert data is not None
    document = json.loads(data.group(1))
    (run,) = document["runs"]
    assert document["kind"] == "pass" and run["graph"] == "Net" and run["added"] == ["neg"]
    (problem,) = run["after"]["problems"]
    assert problem["code"] == "FX005" and problem["nodes"] == ["neg"]
    assert "before it is defined" in problem["message"]


def test_an_unknown_name_lists_classes_and_passes(folder: Path) -> None:
    done = _fxls(folder, "graph", "passes.py::fuse")
    assert done.returncode == 2
    assert "modules: Net; passes: negate_after_relu, relu_to_gelu" in done.stderr


def test_a_class_wins_over_a_pass_of_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "both.py"
    path.write_text("x = 1\n", encoding="utf-8")
    net = ModuleReport("Net", "traced", 1, nodes=[_node("x", "placeholder")],
                       code="def forward(self, x):\n    return x\n")
    run = PassGraphRun("Net", before=net.code, after=net.code)
    report = FileReport(str(path), [net], passes=[PassReport("Net", "graph_module",
                                                             runs=[run])])

    async def analyze(*_: object, **__: object) -> list[FileReport]:
        return [report]

    monkeypatch.setattr(cli, "analyze_many", analyze)
    assert cli.main(["graph", f"{path}::Net"]) == 0
    assert capsys.readouterr().out == "def forward(self, x):\n    return x\n"
    report.modules = []
    assert cli.main(["graph", f"{path}::Net"]) == 0
    assert capsys.readouterr().out.startswith("# Net (graph_module): before -> after")


def _node(name: str, op: NodeOp = "call_function", line: int | None = None) -> NodeInfo:
    span = Span("/m.py", line, line, 0, 1) if line else None
    return NodeInfo(name, op, name, "", "{}", [], span)


def test_after_graph_without_the_before_graph_guesses_from_the_code() -> None:
    run = PassGraphRun(
        "Graph (representative)", added=["neg"], removed=["sin"], rewired=["output"],
        before="def forward(self, x):\n    sin = torch.sin(x);  x = None\n    return sin\n",
        after="def forward(self, x):\n    w = self.w\n    neg = x.neg();  x = None\n"
              "    return neg\n",
        nodes=[_node("neg", line=7), _node("neg", line=8), _node("output", "output", 8)],
    )
    nodes = after_graph(run, None)
    assert [(m.mark, m.node.name, m.node.op, m.lines) for m in nodes] == [
        (" ", "x", "placeholder", ""), (" ", "w", "get_attr", ""),
        ("+", "neg", "call_function", "7,8"), ("~", "output", "output", "8")]
    assert nodes[0].node.users == ["neg"] and nodes[2].inputs == ["x"]
    (removed,) = removed_nodes(run, ModuleReport("M", "traced", 1, nodes=[_node("sin",
                                                                               line=3)]))
    assert (removed.mark, removed.node.name, removed.lines) == ("-", "sin", "3")


def test_a_pass_that_raised_shows_the_graph_before_it_unmarked() -> None:
    run = PassGraphRun("MLP (representative)", problem="RuntimeError: boom",
                       before="def forward(self, x):\n    fc = self.fc(x);  x = None\n"
                              "    t = fc.transpose(1, 2);  fc = None\n    return t\n")
    nodes = after_graph(run, None)
    assert [(m.mark, m.node.name, m.node.op, m.node.target, m.node.args) for m in nodes] == [
        (" ", "x", "placeholder", "x", ""), (" ", "fc", "call_module", "fc", "(x)"),
        (" ", "t", "call_method", "transpose", "(fc, 1, 2)"),
        (" ", "output", "output", "t", "")]

