"""The graph document (``fxls graph --format json``, what the graph page draws): every problem
lands on the graph, on the nodes of its own expression, else on the nodes made at its lines
in the user's file, else on the group of the module its line calls, and says which
(``attached``); ``sources`` carries the lines around each node and problem, so that the page
shows the code without an editor. One analysis of the case file serves the module."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fxls import cli
from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.graph_view.module_graph import graph_document
from fxls.graph_view.problem_nodes import called_groups
from fxls.graph_view.source_lines import SourceFiles, source_lines
from fxls.graph_view.target_graph import target_document
from fxls.project.settings import load_settings
from fxls.report import (
    BreakInfo,
    Diagnostic,
    FileReport,
    ModuleReport,
    NodeInfo,
    RelatedInfo,
    Span,
    TargetGraph,
    TargetGraphs,
)
from fxls.result_cache import ResultCache
from fxls.result_cache.check_use import CachedCheck

# a library's module: its folder is named like an installed package's, so its frames are
# not the user's and its problems are reported at the user's line that called into it
MIXERS = """\
from torch import nn


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if h.sum() > 0:
            h = h * 2
        return h.relu()
"""

NET = """\
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "site-packages"))

import torch  # noqa: E402
from mixers import Mixer  # noqa: E402
from torch import nn  # noqa: E402


class Net(nn.Module):
    # fxls: args (torch.randn(2, 8),)
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.mixer = Mixer()

    def forward(self, x):
        h = self.fc(x)
        h = self.mixer(h)
        return h + 1


class Wrapped(nn.Module):
    # fxls: args (torch.randn(2, 8),)
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.mixer = Mixer()

    def forward(self, x):
        return self.mix(self.fc(x)) - 1

    def mix(self, h):
        return self.mixer(h)


class Branchy(nn.Module):
    # fxls: args (torch.randn(2, 8),)
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x
"""


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def _span(path: Path, text: str, fragment: str, line_fragment: str | None = None
          ) -> dict[str, Any]:
    """The range of ``fragment`` on the first line holding ``line_fragment`` (default: it)."""
    line = _line(text, line_fragment or fragment)
    col = text.splitlines()[line - 1].index(fragment)
    return {"file": str(path), "line": line, "end_line": line, "col": col,
            "end_col": col + len(fragment)}


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FileReport]:
    folder = tmp_path_factory.mktemp("document")
    (folder / "site-packages").mkdir()
    (folder / "site-packages" / "mixers.py").write_text(MIXERS, encoding="utf-8")
    path = folder / "net.py"
    path.write_text(NET, encoding="utf-8")
    request = AnalysisRequest(str(path), NET, load_settings(path))
    (report,) = asyncio.run(analyze_many([request], python=sys.executable, jobs=1))
    return path, report


def _document(analysed: tuple[Path, FileReport], name: str) -> dict[str, Any]:
    _, report = analysed
    module = next(m for m in report.modules if m.name == name)
    return graph_document(module, report)


def _landed(document: dict[str, Any]) -> list[tuple[str, str, list[str], str | None, Any]]:
    return [(p["code"], p["span"]["line"], p["nodes"], p["group"], p["attached"])
            for p in document["problems"]]


def test_a_problem_on_its_own_expression_marks_the_nodes_it_made(
        analysed: tuple[Path, FileReport]) -> None:
    path, _ = analysed
    (problem,) = _document(analysed, "Branchy")["problems"]
    assert problem["span"] == _span(path, NET, "x.sum() > 0")
    assert (problem["code"], problem["nodes"], problem["group"], problem["attached"]) == \
        ("FX001", ["sum_1", "gt"], None, "own")


def test_a_problem_inside_a_library_lands_on_the_group_its_line_calls(
        analysed: tuple[Path, FileReport]) -> None:
    # tracing made no node at `self.mixer(h)`: the library's nodes are at the library's lines
    path, _ = analysed
    document = _document(analysed, "Net")
    (problem,) = document["problems"]
    assert problem["span"] == _span(path, NET, "self.mixer(h)")
    assert (problem["code"], problem["nodes"], problem["group"], problem["attached"]) == \
        ("FX001", [], "mixer", "group")
    assert "mixer" in {group["path"] for group in document["groups"]}


def test_a_problem_at_a_submodule_call_lands_on_that_module_not_on_the_line_around_it(
        analysed: tuple[Path, FileReport]) -> None:
    # reported in `mix` at `self.mixer(h)`, which made no node in the user's file; the nodes
    # `forward`'s line made (`fc`, `sub`) are not where it went wrong: the `mixer` group is
    path, _ = analysed
    (problem,) = _document(analysed, "Wrapped")["problems"]
    assert problem["span"] == _span(path, NET, "self.mixer(h)", "return self.mixer(h)")
    assert (problem["nodes"], problem["group"], problem["attached"]) == \
        ([], "mixer", "group")


def test_sources_hold_the_lines_around_each_node_and_problem(
        analysed: tuple[Path, FileReport]) -> None:
    path, _ = analysed
    sources = _document(analysed, "Net")["sources"]
    net_lines = NET.splitlines()
    first, last = _line(NET, "h = self.fc(x)") - 2, _line(NET, "return h + 1") + 2
    mixers_lines = MIXERS.splitlines()
    assert sources == {
        str(path): {str(n): net_lines[n - 1] for n in range(first, last + 1)},
        # the nodes at lines 10-13 of a 13-line file: nothing past its end
        str(path.parent / "site-packages" / "mixers.py"): {
            str(n): mixers_lines[n - 1] for n in range(_line(MIXERS, "h = self.proj(x)") - 2,
                                                       len(mixers_lines) + 1)},
    }


def test_json_carries_the_document_and_table_no_sources(
        analysed: tuple[Path, FileReport], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path, report = analysed

    async def analyze(*_: object, **__: object) -> list[FileReport]:
        return [report]

    monkeypatch.setattr(cli, "analyze_many", analyze)
    assert cli.main(["graph", f"{path}::Net", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["sources"] == _document(analysed, "Net")["sources"]
    assert [(p["group"], p["attached"]) for p in printed["problems"]] == [("mixer", "group")]
    assert cli.main(["graph", f"{path}::Net", "--format", "table"]) == 0
    assert "self.mixer(h)" not in capsys.readouterr().out


def test_only_python_files_and_notebooks_are_read_into_sources(tmp_path: Path) -> None:
    secret = tmp_path / "key.pem"
    secret.write_text("-----BEGIN PRIVATE KEY-----\n", encoding="utf-8")
    notebook = tmp_path / "net.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Net"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["import torch\n", "x = torch.ones(2)"]},
             {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["y = x.relu()"]}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 5}), encoding="utf-8")
    # a notebook's spans count the lines of its code cells joined after the prelude
    assert source_lines(SourceFiles(), [(str(secret), 1, 1), (str(notebook), 4, 4)]) == {
        str(notebook): {"2": "import torch", "3": "x = torch.ones(2)", "4": "y = x.relu()"}}


CALLER = """\
class Net:
    def forward(self, x):
        feats = self.backbone(x)
        if feats.mean() > 0:
            feats = feats * 2
        return self.head(feats)
"""


def _node(name: str, span: Span | None, module_path: str | None = None) -> NodeInfo:
    return NodeInfo(name, "call_function", name, "", "{}", [], span, module_path=module_path)


def test_target_documents_attach_problems_too(tmp_path: Path) -> None:
    path = tmp_path / "caller.py"
    path.write_text(CALLER, encoding="utf-8")

    def at(fragment: str) -> Span:
        found = _span(path, CALLER, fragment)
        return Span(found["file"], found["line"], found["end_line"], found["col"],
                    found["end_col"])

    called, branch = at("self.backbone(x)"), at("feats.mean() > 0")
    # export: the library's nodes sit at the user's line that called into the library
    export = TargetGraph([_node("x", None), _node("linear", called, "backbone.encoder"),
                          _node("relu", called, "backbone")], drafted=True)
    # compile: a break at the branch; dynamo's first subgraph made no node at that line
    compile_graphs = [TargetGraph([_node("linear", called, "backbone")],
                                  break_after=BreakInfo(branch, "data-dependent branch")),
                      TargetGraph([_node("head", at("self.head(feats)"))])]
    module = ModuleReport("Net", "partial", 3, Span(str(path), 1, 1, 6, 9),
                          target_graphs=TargetGraphs(export, compile_graphs))
    reached = RelatedInfo(called, "reached from here")
    report = FileReport(str(path), [module], [
        Diagnostic("FX201", "error", "data-dependent branch", branch, "Net", [reached]),
        Diagnostic("FX201", "error", "before the call", Span(str(path), 3, 3, 8, 13), "Net"),
        Diagnostic("FX001", "error", "symbolic tracing only", branch, "Net"),
    ])
    exported = target_document(module, report, "export")
    assert exported is not None
    assert _landed(exported) == [("FX201", 4, ["linear", "relu"], None, "line"),
                                 ("FX201", 3, ["linear", "relu"], None, "line")]
    assert exported["sources"] == {str(path): {
        str(n): line for n, line in enumerate(CALLER.splitlines(), 1)}}
    compiled = target_document(module, report, "compile")
    assert compiled is not None
    # the break is on the end of the subgraph it ended; FX201 and FX001 are not compile's
    assert _landed(compiled) == [("FX301", 4, ["linear@1"], None, "own")]


CALLS = """\
        h = self.blocks[0].attn.forward(x)
        h = self.blocks[i](h)
        return self.head(self.encoder(h)) + self.skip(x)
"""


def test_the_group_a_line_calls_is_the_longest_module_path_of_the_graph(
        tmp_path: Path) -> None:
    path = tmp_path / "calls.py"
    path.write_text(CALLS, encoding="utf-8")
    groups = {"blocks", "blocks.0", "blocks.0.attn", "blocks.1", "encoder", "head"}
    files = SourceFiles()

    def called(line: int, col: int = 0, end_col: int = 0) -> list[str]:
        return called_groups(Span(str(path), line, line, col, end_col), groups, files)

    assert called(1) == ["blocks.0.attn"]  # `.forward` is no module of the graph
    assert called(2) == ["blocks"]  # which block `i` is, the text cannot say
    # in text order, `skip` made no group; the range's own calls first
    assert called(3) == ["head", "encoder"]
    start = CALLS.splitlines()[2].index("self.encoder(h)")
    assert called(3, start, start + len("self.encoder(h)")) == ["encoder"]


def test_graph_draws_a_file_check_left_in_the_cache_without_analysing_it(
        analysed: tuple[Path, FileReport], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path, report = analysed
    monkeypatch.setenv("FXLS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FXLS_NO_CACHE", raising=False)
    # what `fxls check` keeps after analysing the file
    check = CachedCheck(ResultCache.default(), sys.executable)
    check.keep(check.look_up(AnalysisRequest(str(path), NET, load_settings(path))), report)
    analysed_paths: list[str] = []

    async def analyze(requests: list[AnalysisRequest], **_: object) -> list[FileReport]:
        analysed_paths.extend(request.path for request in requests)
        return [report for _ in requests]

    monkeypatch.setattr(cli, "analyze_many", analyze)
    assert cli.main(["graph", f"{path}::Net", "--format", "json"]) == 0
    drawn = capsys.readouterr()
    assert analysed_paths == []
    assert json.loads(drawn.out) == _document(analysed, "Net")
    assert drawn.err == ("fxls: 1 of 1 files from the cache (unchanged since they were "
                         "checked; --no-cache analyses them again)\n")
    assert cli.main(["graph", f"{path}::Net", "--format", "json", "--no-cache"]) == 0
    assert analysed_paths == [str(path)] and capsys.readouterr().err == ""
