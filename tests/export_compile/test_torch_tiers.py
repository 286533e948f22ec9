"""The export and compile targets (SPEC: Targets) against torch itself, as fxcore is
tested against torch.fx: each class of ``models.py`` through ``fxls check`` (the real
worker) and, in a plain process, through ``torch._dynamo.explain`` and ``torch.export``
(``torch_reference.py``). fxls reports each break and failure they report, at the user's
line, and nothing they do not; each code at its exact range. The cases (each class, each
project setting, a library's break) are checked by one ``fxls check``."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.torch_answers import torch_answer

HERE = Path(__file__).parent
MODELS = (HERE / "models.py").read_text(encoding="utf-8")


TARGETED = '[tool.fxls]\ntargets = ["export", "compile"]\n'
LIBRARY_CASE = HERE / "library_case"


def _only(*classes: str, source: str = MODELS) -> str:
    """``source`` with every class but ``classes`` blanked out, line for line (each line
    keeps its number; a run checks those classes alone)."""
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name not in classes:
            first = node.lineno - 1 - len(node.decorator_list)
            lines[first:node.end_lineno] = [""] * (node.end_lineno - first)
    return "\n".join(lines) + "\n"


MISMATCH = '''

class Mismatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.proj = nn.Linear(5, 8)

    def forward(self, x):  # the input inferred from `self.lin` cannot fit `self.proj`
        return self.lin(x) + self.proj(x)
'''
#: each case's ``models.py`` and its project's ``pyproject.toml`` (none: the default)
CASES = {
    "both": (MODELS, TARGETED),
    "strict": (_only("CallsOs", "Clean"),
               '[tool.fxls]\ntargets = ["export"]\nexport_strict = true\n'),
    "fullgraph": (_only("Printing", "Clean"),
                  '[tool.fxls]\ntargets = ["compile"]\nfullgraph = true\n'),
    "compile_only": (_only("RowLoop", "ValueBranch") + "\n\ncompiled = torch.compile(RowLoop())\n",
                     ""),
    "pragma": (_only("RowLoop", "ValueBranch").replace(
        "class RowLoop(nn.Module):\n", "class RowLoop(nn.Module):\n    # fxls: targets compile\n"),
        ""),
    "mismatch": (_only() + MISMATCH, TARGETED),
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every case in a folder of its own, and the library case's project (compile targeted)
    with its library on PYTHONPATH, all checked by one ``fxls check``: each report by its
    case's folder name, and the run's stderr."""
    root = tmp_path_factory.mktemp("cases")
    for name, (source, pyproject) in CASES.items():
        (root / name).mkdir()
        (root / name / "models.py").write_text(source, encoding="utf-8")
        if pyproject:
            (root / name / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    shutil.copytree(LIBRARY_CASE, root / "library_case")
    project = root / "library_case" / "project"
    (project / "pyproject.toml").write_text('[tool.fxls]\ntargets = ["compile"]\n',
                                            encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--timeout", "300", *CASES, str(project / "model.py")],
        capture_output=True, text=True, cwd=root, timeout=900,
        env={**os.environ, "PYTHONPATH": str(root / "library_case" / "lib")})
    assert done.returncode in (0, 1), done.stderr
    reports = {(root / f["path"]).resolve().relative_to(root.resolve()).parts[0]: f
               for f in json.loads(done.stdout)["files"]}
    assert sorted(reports) == sorted([*CASES, "library_case"])
    return {**reports, "stderr": done.stderr}


@pytest.fixture(scope="module")
def both(checked: dict[str, Any]) -> dict[str, Any]:
    return checked["both"]


@pytest.fixture(scope="module")
def torch_says(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("reference")
    shutil.copy(HERE / "models.py", folder / "models.py")
    script = HERE / "torch_reference.py"
    answer = torch_answer([sys.executable, str(script), str(folder / "models.py")],
                          [script, folder / "models.py"], cwd=folder, timeout=600)
    return json.loads(answer.strip().splitlines()[-1])


def _lines(report: dict[str, Any], module: str, prefix: str) -> list[int]:
    return sorted(d["range"]["start"]["line"] + 1 for d in report["diagnostics"]
                  if d["module"] == module and d["code"].startswith(prefix))


CLASSES = ["ValueBranch", "Printing", "RowLoop", "CustomOp", "FixedBatch", "Raising", "Clean",
           "CallsOs"]


@pytest.mark.parametrize("name", CLASSES)
def test_graph_breaks_are_dynamos(both: dict[str, Any], torch_says: dict[str, Any],
                                  name: str) -> None:
    said = torch_says[name]
    assert _lines(both, name, "FX301") == sorted(set(said["breaks"]))
    # dynamo raised instead (the user's exception, an op it cannot run): FX309 there
    assert _lines(both, name, "FX309") == ([said["compile_error_line"]]
                                           if said["compile_error_line"] else [])


@pytest.mark.parametrize("name", CLASSES)
def test_export_failures_are_torchs(both: dict[str, Any], torch_says: dict[str, Any],
                                    name: str) -> None:
    said = torch_says[name]
    found = _lines(both, name, "FX2")
    (module,) = [m for m in both["modules"] if m["name"] == name]
    if said["exported"]:
        assert found == [] and module["targets"]["export"] == "exported"
        return
    expected = {line for line in [said["export_line"], *said["drafted"]] if line}
    assert expected and expected <= set(found)
    assert module["targets"]["export"].startswith("failed")
    # nothing torch does not report (a failure with no line of the file is at the class)
    assert set(found) <= expected | {_line_of(f"class {name}(")}


def _line_of(fragment: str, occurrence: int = 0) -> int:
    lines = [number for number, text in enumerate(MODELS.splitlines(), 1) if fragment in text]
    return lines[occurrence]


def _range_of(fragment: str, line_fragment: str | None = None) -> dict[str, Any]:
    line = _line_of(line_fragment or fragment)
    start = MODELS.splitlines()[line - 1].index(fragment)
    return {"start": {"line": line - 1, "character": start},
            "end": {"line": line - 1, "character": start + len(fragment)}}


@pytest.mark.parametrize(("code", "module", "fragment"), [
    ("FX201", "ValueBranch", "y.sum() > 0"),
    ("FX201", "ValueBranch", "k.shape[0] > 3"),
    ("FX203", "CustomOp", "no_fake(x)"),
    ("FX205", "FixedBatch", "x.shape[0] == 4"),
    ("FX209", "Raising", 'raise ValueError("no such mode")'),
    ("FX301", "ValueBranch", "y.sum() > 0"),
    ("FX301", "ValueBranch", "torch.nonzero(y)"),
    ("FX301", "Printing", 'print("shape", x.shape)'),
    ("FX309", "CustomOp", "no_fake(x)"),
    ("FX309", "Raising", 'raise ValueError("no such mode")'),
])
def test_exact_ranges(both: dict[str, Any], code: str, module: str, fragment: str) -> None:
    ranges = [d["range"] for d in both["diagnostics"]
              if d["code"] == code and d["module"] == module]
    assert _range_of(fragment) in ranges, ranges


def test_each_diagnostic_says_its_target(both: dict[str, Any]) -> None:
    targets = {d["code"][:3]: d["target"] for d in both["diagnostics"]}
    assert targets == {"FX2": "export", "FX3": "compile"}
    assert both["targets"]["targets"] == ["export", "compile"]
    assert "settings" in both["targets"]["because"]


def test_a_graph_break_is_a_warning_with_torchs_page(both: dict[str, Any]) -> None:
    (printing,) = [d for d in both["diagnostics"]
                   if d["code"] == "FX301" and d["module"] == "Printing"]
    assert printing["severity"] == "warning"
    assert "GB0059" in printing["message"] and "print" in printing["message"]


def test_strict_export_reports_what_dynamo_cannot_trace(checked: dict[str, Any]) -> None:
    report = checked["strict"]
    strict = [d for d in report["diagnostics"] if d["code"] == "FX202"]
    assert [d["range"] for d in strict if d["module"] == "CallsOs"] == [_range_of("os.getcwd()")]
    assert all(d["target"] == "export" for d in report["diagnostics"])


def test_fullgraph_makes_breaks_errors(checked: dict[str, Any]) -> None:
    breaks = [d for d in checked["fullgraph"]["diagnostics"] if d["code"] == "FX301"]
    assert breaks and {d["severity"] for d in breaks} == {"error"}


def test_compile_only_project_gets_no_symbolic_trace_codes(checked: dict[str, Any]) -> None:
    compile_only = checked["compile_only"]
    assert compile_only["targets"]["targets"] == ["compile"]
    because = compile_only["targets"]["because"]
    assert "torch.compile" in because
    assert f"fxls: targets compile: {because}\n" in checked["stderr"]
    assert not [d for d in compile_only["diagnostics"] if d["code"].startswith("FX0")]
    (row_loop,) = [m for m in compile_only["modules"] if m["name"] == "RowLoop"]
    assert row_loop["targets"] == {"compile": "compiled"}


def test_symbolic_trace_by_default_and_a_class_pragma(checked: dict[str, Any]) -> None:
    report = checked["pragma"]
    assert "targets" not in report  # the default, unsaid (the output as it always was)
    codes = {(d["module"], d["code"]) for d in report["diagnostics"]}
    assert ("ValueBranch", "FX001") in codes  # symbolic tracing, as always
    assert not [c for c in codes if c[0] == "RowLoop"]  # compile only: its loop is fine
    (row_loop,) = [m for m in report["modules"] if m["name"] == "RowLoop"]
    assert row_loop["targets"] == {"compile": "compiled"}


def test_statistics_and_code_lens_say_each_targets_status(tmp_path: Path) -> None:
    path = tmp_path / "models.py"
    path.write_text(_only("Printing"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--statistics", "--no-progress",
         "--target", "symbolic_trace,export,compile", str(path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert f"models.py:{_line_of('class Printing(')} Printing: symbolic_trace traced · " \
           "export exported · compile 1 graph break" in done.stdout


def test_inputs_the_module_cannot_run_on_are_no_export_failure(checked: dict[str, Any]) -> None:
    report = checked["mismatch"]
    (module,) = [m for m in report["modules"] if m["name"] == "Mismatch"]
    assert module["targets"]["export"].startswith("not run: the module raises on the example")
    assert not [d for d in report["diagnostics"] if d["module"] == "Mismatch"]


_LIBRARY_BREAKS_IN_TORCH = (
    "import torch, torch._dynamo; from model import Net; "
    "e = torch._dynamo.explain(Net())(torch.ones(2, 8)); "
    "print(len({(r.user_stack[-1].filename, r.user_stack[-1].lineno) "
    "for r in e.break_reasons}))")


def test_a_break_inside_a_library_is_at_the_users_call(checked: dict[str, Any],
                                                       tmp_path: Path) -> None:
    """dynamo's stack for the second break has library frames only (it compiled
    ``Block.forward`` on its own): fxls finds the user's call from an eager run."""
    shutil.copytree(LIBRARY_CASE, tmp_path / "case")
    project = tmp_path / "case" / "project"
    answer = torch_answer(
        [sys.executable, "-c", _LIBRARY_BREAKS_IN_TORCH],
        [project / "model.py", tmp_path / "case" / "lib" / "breaky_lib.py"], cwd=project,
        env={**os.environ, "PYTHONPATH": f"{project.parent / 'lib'}:{project}"}, timeout=600)
    assert answer.strip().splitlines()[-1] == "2"  # two sites, both in the library
    (found,) = checked["library_case"]["diagnostics"]
    line = (project / "model.py").read_text().splitlines().index("        y = self.block(x)")
    assert found["code"] == "FX301" and found["range"] == {
        "start": {"line": line, "character": 12}, "end": {"line": line, "character": 25}}
    assert "2 graph breaks here" in found["message"]
    assert "breaky_lib.noisy" in found["message"]
    assert "breaky_lib.Block.forward" in found["message"]
