"""``fxls check --statistics``: how much of a project was traced, and why the rest was not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fxls.output.json_format import format_json
from fxls.output.located import SourceCache
from fxls.output.statistics import Coverage, collect_statistics, format_statistics_text
from fxls.output.text import format_text
from fxls.report import (
    Diagnostic,
    FileReport,
    ModuleReport,
    PassGraphRun,
    PassReport,
    Span,
)


def _span(path: str, line: int) -> Span:
    return Span(path, line, line, 6, 12)


def _reports() -> list[FileReport]:
    unbuilt = ModuleReport("Classifier", "skipped", span=_span("/p/heads.py", 7))
    fx101 = Diagnostic(
        "FX101", "information", "`Classifier` cannot be constructed with known arguments "
        "(missing 'num_classes'); add `# fxls: init num_classes=...` above the class",
        _span("/p/heads.py", 7), module="Classifier",
    )
    heads = FileReport("heads.py", [
        ModuleReport("Head", "traced", 5, span=_span("/p/heads.py", 2)),
        ModuleReport("Gate", "partial", 4, span=_span("/p/heads.py", 4)),
        unbuilt,
        ModuleReport("Loader", "skipped", span=_span("/p/heads.py", 9),
                     reason="`# fxls: skip` pragma"),
        ModuleReport("Broken", "failed", span=_span("/p/heads.py", 11)),
    ], [fx101])
    stem = FileReport("stem.py", [ModuleReport("Stem", "traced", 9)])
    broken = FileReport("broken.py", [], [Diagnostic(
        "FX100", "error", "syntax error: invalid syntax", _span("/p/broken.py", 3))])
    helpers = FileReport("helpers.py")
    return [heads, stem, broken, helpers]


def test_the_total_line_counts_partial_as_traced() -> None:
    coverage = Coverage(traced=30, partial=4, skipped=6, failed=2)
    assert coverage.summary() == (
        "42 classes: 30 traced, 4 partial, 6 not constructed, 2 failed (81% traced)"
    )


def test_the_share_is_100_percent_only_when_every_class_has_a_graph() -> None:
    assert Coverage(traced=999, skipped=1).summary().endswith("(99% traced)")
    assert Coverage().summary() == "0 classes: 0 traced, 0 partial, 0 not constructed, 0 failed"


def test_reasons_come_from_the_module_else_from_its_first_diagnostic() -> None:
    statistics = collect_statistics(_reports())
    reasons = {(item.name, item.status): item.reason for item in statistics.not_traced}
    assert reasons[("Classifier", "skipped")].startswith("FX101 `Classifier` cannot be")
    assert reasons[("Loader", "skipped")] == "`# fxls: skip` pragma"
    assert reasons[("Broken", "failed")] == "no reason recorded"
    assert reasons[(None, "not analysed")] == "FX100 syntax error: invalid syntax"


def test_text_has_a_table_per_file_a_total_and_the_classes_without_a_graph() -> None:
    text = format_statistics_text(collect_statistics(_reports()))
    assert text.splitlines() == [
        "file       classes  traced  partial  not constructed  failed      traced %",
        "heads.py         5       1        1                2       1           40%",
        "stem.py          1       1        0                0       0          100%",
        "broken.py        0       0        0                0       0  not analysed",
        "(1 file without nn.Module classes not shown)",
        "6 classes: 2 traced, 1 partial, 2 not constructed, 1 failed (50% traced); "
        "1 file not analysed",
        "Not constructed:",
        "  heads.py:7 Classifier: FX101 `Classifier` cannot be constructed with known "
        "arguments (missing 'num_classes'); add `# fxls: init num_classes=...` above the class",
        "  heads.py:9 Loader: `# fxls: skip` pragma",
        "Failed:",
        "  heads.py:11 Broken: no reason recorded",
        "Not analysed:",
        "  broken.py:3: FX100 syntax error: invalid syntax",
    ]


def test_one_file_gets_the_total_line_without_a_table() -> None:
    text = format_statistics_text(collect_statistics(_reports()[1:2]))
    assert text == "1 class: 1 traced, 0 partial, 0 not constructed, 0 failed (100% traced)\n"


def test_text_statistics_follow_the_diagnostics_after_a_blank_line() -> None:
    reports = _reports()
    sources = SourceCache()
    sources.add("/p/heads.py", "\n" * 12)
    sources.add("/p/broken.py", "\n" * 4)
    text = format_text(reports, sources, collect_statistics(reports))
    diagnostics, _, statistics = text.partition("\n\n")
    assert [line.split(": ")[1][:5] for line in diagnostics.splitlines()] == ["FX101", "FX100"]
    assert statistics.startswith("file ")


def test_json_has_statistics_only_when_asked() -> None:
    reports = _reports()
    sources = SourceCache()
    assert "statistics" not in json.loads(format_json(reports, sources))
    document = json.loads(format_json(reports, sources, collect_statistics(reports)))
    statistics = document["statistics"]
    assert {k: statistics[k] for k in ("classes", "traced", "partial", "skipped", "failed")} \
        == {"classes": 6, "traced": 2, "partial": 1, "skipped": 2, "failed": 1}
    assert statistics["traced_share"] == 0.5 and statistics["files_not_analysed"] == 1
    assert [f["path"] for f in statistics["files"]] == [r.path for r in reports]
    assert statistics["not_traced"][0] == {
        "path": "heads.py", "module": "Classifier", "status": "skipped", "line": 7,
        "reason": statistics["not_traced"][0]["reason"],
    }


def _pass_reports() -> list[FileReport]:
    fuse = PassReport("fuse", "graph_module", _span("/p/passes.py", 3), [
        PassGraphRun("Net", added=["add"]),
        PassGraphRun("Mlp", problem="node `neg` uses `relu` before it is defined: the graph "
                     "is not in topological order (in the graph of `Mlp`)"),
    ])
    clean = PassReport("relu_to_gelu", "graph_module", _span("/p/passes.py", 9),
                       [PassGraphRun("Net", added=["gelu"], removed=["relu"])])
    unused = PassReport("helper", "graph", _span("/p/passes.py", 15), [PassGraphRun(
        "MLP (representative)", problem="RuntimeError: boom (raised by the pass `helper` on "
        "the graph of `MLP (representative)`)")])
    return [FileReport("passes.py", [ModuleReport("Net", "traced", 4)],
                       passes=[fuse, clean, unused]),
            FileReport("nets.py", [ModuleReport("Mlp", "traced", 3)])]


def test_passes_are_counted_per_run_and_per_pass_with_their_problems() -> None:
    statistics = collect_statistics(_pass_reports())
    assert statistics.passes.to_dict() == {"found": 3, "run": 3, "runs": 4,
                                           "with_problems": 2}
    text = format_statistics_text(statistics)
    assert text.splitlines()[-5:] == [
        "2 classes: 2 traced, 0 partial, 0 not constructed, 0 failed (100% traced)",
        "3 FX passes: 4 runs on graphs, 2 with problems",
        "Passes with problems:",
        "  passes.py:3 fuse on Mlp: node `neg` uses `relu` before it is defined: the graph is "
        "not in topological order",
        "  passes.py:15 helper on MLP (representative): RuntimeError: boom",
    ]
    document = statistics.to_dict()
    assert document["passes"] == {
        "found": 3, "run": 3, "runs": 4, "with_problems": 2,
        "problems": [{"path": "passes.py", "pass": "fuse", "graph": "Mlp", "line": 3,
                      "problem": statistics.pass_problems[0].problem},
                     {"path": "passes.py", "pass": "helper", "graph": "MLP (representative)",
                      "line": 15, "problem": statistics.pass_problems[1].problem}],
    }
    assert [f["passes"]["runs"] for f in document["files"]] == [4, 0]
    never = PassReport("unused", "graph")
    assert collect_statistics([FileReport("p.py", passes=[never])]).passes.summary() == (
        "1 FX pass: 0 runs on graphs, 0 with problems, 1 not run")


def test_without_passes_the_text_has_no_pass_line() -> None:
    text = format_statistics_text(collect_statistics(_pass_reports()[1:]))
    assert "FX pass" not in text and "Passes" not in text


PROJECT = {
    "pyproject.toml": "[tool.fxls]\ntimeout = 30\n",
    "nets.py": (
        "import torch\nfrom torch import nn\n\n\n"
        "class Mlp(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(8, 4)\n\n"
        "    def forward(self, x):\n        return self.fc(x).relu()\n\n\n"
        "class Sized(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        assert config.width % 11 == 0, 'a multiple of 11'\n"
        "        self.fc = nn.Linear(config.width, 4)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n"
    ),
    "gates.py": (
        "import torch\nfrom torch import nn\n\n\n"
        "class Gate(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n            return self.fc(x)\n        return x\n"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _check(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "fxls", "check", "--no-progress", *options, "."]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=folder)


def test_check_statistics_in_text_and_json(project: Path) -> None:
    done = _check(project, "--statistics")
    assert done.returncode == 1, done.stderr  # Gate's FX001 is an error
    diagnostics, _, statistics = done.stdout.partition("\n\n")
    assert "FX001" in diagnostics and "FX101" in diagnostics
    lines = statistics.splitlines()
    assert lines[0].split() == ["file", "classes", "traced", "partial", "not", "constructed",
                                "failed", "traced", "%"]
    assert "3 classes: 1 traced, 1 partial, 1 not constructed, 0 failed (67% traced)" in lines
    why = lines[lines.index("Not constructed:") + 1]
    assert why.startswith("  ./nets.py:14 Sized: ") and "config" in why

    document = json.loads(_check(project, "--statistics", "--format", "json").stdout)
    assert document["statistics"]["classes"] == 3
    assert document["statistics"]["not_traced"][0]["module"] == "Sized"
