"""Model code where it lives: a package with a src layout, relative imports, a registry of
factories, config dataclasses, a submodule in another file, a circular import — checked
with a real `fxls check` in the worker (tests/data/minizoo, copied so edits stay local)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fxls.analysis.packages import locate_module
from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.project.settings import load_settings

FIXTURE = Path(__file__).parents[1] / "data" / "minizoo"
MODELS = Path("src/minizoo/models")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("zoo") / "minizoo"
    shutil.copytree(FIXTURE, target)
    (target / MODELS / "broken_import.py").write_text(
        "from torch import nn\n"
        "from .does_not_exist import Thing\n"
        "from ..layers import ConvBnAct\n\n\n"
        "class StillAnalysed(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.conv = ConvBnAct(3, 4)\n\n"
        "    def forward(self, x):\n"
        "        return self.conv(x)\n\n\n"
        "class UsesThing(Thing):\n"
        "    pass\n",
        encoding="utf-8",
    )
    return target


@pytest.fixture(scope="module")
def checked(project: Path) -> dict[str, dict]:
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", str(project / MODELS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=project)
    assert done.returncode in (0, 1), done.stderr
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}


def modules(result: dict) -> dict[str, dict]:
    return {m["name"]: m for m in result["modules"]}


def codes(result: dict) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


def test_relative_imports_and_a_registry_that_refuses_a_second_registration(checked):
    # the package's __init__ imports resnetish: it ran once (a second run would raise
    # "An entry is already registered") and its relative imports resolved
    result = checked["resnetish.py"]
    assert "FX100" not in codes(result), result["diagnostics"]
    found = modules(result)
    assert found["TinyResNet"]["status"] == "traced"
    assert found["TinyResNet"]["entry"] == "tinyresnet10(pretrained=False)"
    assert found["TinyResNet"]["via"] is None


def test_a_class_reachable_only_inside_a_factory_built_model_is_traced_via_its_root(checked):
    block = modules(checked["resnetish.py"])["BasicBlock"]
    assert (block["status"], block["via"], block["entry"]) == (
        "traced", "TinyResNet", "tinyresnet10(pretrained=False)")
    assert block["nodes"] > 3


def test_config_dataclasses_are_built_and_shrunk(checked):
    found = modules(checked["vitish.py"])
    for name in ("TinyViT", "Layer", "Attention"):
        assert found[name]["status"] in ("traced", "partial"), found[name]
        assert found[name]["entry"] == "built from ViTConfig() with 2 layers, hidden size 64"


def test_a_problem_in_a_submodule_from_another_file_is_located_and_quoted_there(
    checked, project
):
    blocks = project / "src/minizoo/layers/blocks.py"
    text = blocks.read_text(encoding="utf-8")
    (found,) = [d for d in checked["vitish.py"]["diagnostics"] if d["code"] == "FX001"]
    assert Path(found["path"]).resolve() == blocks.resolve()
    line = text[: text.index("h.mean() > 0")].count("\n")
    assert found["range"]["start"] == {"line": line, "character": 11}
    assert found["message"].startswith("`h.mean() > 0` depends on a traced value")


def test_a_circular_import_inside_the_package(checked):
    assert modules(checked["cycle_a.py"])["Head"]["status"] == "traced"
    assert modules(checked["cycle_b.py"])["Body"]["status"] == "traced"
    assert "FX100" not in codes(checked["cycle_a.py"]) + codes(checked["cycle_b.py"])


def test_literal_constructions_and_entry_points(checked):
    found = modules(checked["heads.py"])
    assert found["ClsHead"]["entry"] == "ClsHead(16, 4) (line 18)"
    assert found["Wide"]["entry"] == "minizoo.models.heads:build_wide(width=8)"
    # `secret` is only stored: any size does
    assert found["Mystery"]["status"] == "traced"
    assert found["Mystery"]["entry"] == "Mystery(secret=32), arguments inferred from their use"


def test_a_failed_import_is_reported_at_its_line_and_the_rest_is_analysed(checked, project):
    result = checked["broken_import.py"]
    (failure,) = [d for d in result["diagnostics"] if d["code"] == "FX100"]
    assert failure["range"]["start"] == {"line": 1, "character": 0}
    assert "minizoo.models.does_not_exist" in failure["message"]
    assert modules(result)["StillAnalysed"]["status"] == "traced"
    assert "UsesThing" not in modules(result)  # its base class never existed


def test_the_documents_unsaved_text_is_what_runs_for_its_module(project):
    path = project / MODELS / "cycle_b.py"
    edited = path.read_text(encoding="utf-8").replace("return self.fc(x)",
                                                      "return self.fc(x).relu()")
    request = AnalysisRequest(str(path), edited, load_settings(path))
    (report,) = asyncio.run(analyze_many([request], python=sys.executable, jobs=1))
    body = next(m for m in report.modules if m.name == "Body")
    assert body.status == "traced" and body.node_count == 4  # x, fc, relu, output


def test_no_bytecode_is_written_into_the_project(project, checked):
    assert not list(project.rglob("__pycache__"))


def test_where_files_run_from(tmp_path):
    src = tmp_path / "src" / "pkg" / "sub"
    src.mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (src / "mod.py").write_text("")
    # a regular package under src/, with a namespace folder (sub has no __init__.py)
    location = locate_module(src / "mod.py", tmp_path, [], None)
    assert (location.name, location.import_root) == ("pkg.sub.mod", str(tmp_path / "src"))
    assert location.package == "pkg.sub"
    # [tool.fxls] roots wins
    location = locate_module(src / "mod.py", tmp_path, ["src/pkg"], None)
    assert location.name == "sub.mod"
    # a package's __init__ runs as the package
    location = locate_module(tmp_path / "src" / "pkg" / "__init__.py", tmp_path, [], None)
    assert (location.name, location.package) == ("pkg", "pkg")
    # a lone script is named by its stem and runs from its folder
    script = tmp_path / "tools" / "train_net.py"
    script.parent.mkdir()
    script.write_text("")
    location = locate_module(script, tmp_path, [], None)
    assert (location.name, location.import_root) == ("train_net", str(script.parent))
    # ... unless it uses relative imports: then it is a namespace package's module
    import ast

    tree = ast.parse("from .helpers import f\n")
    assert locate_module(script, tmp_path, [], tree).name == "tools.train_net"


def test_parameters_get_values_from_their_use_whatever_their_names(project):
    path = project / "src/minizoo/layers/blocks.py"
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", str(path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=project)
    (result,) = json.loads(done.stdout)["files"]
    found = modules(result)
    assert found["ConvBnAct"]["status"] == "traced"
    assert found["ConvBnAct"]["entry"] == (
        "ConvBnAct(in_chs=32, out_chs=32), arguments inferred from their use")
    # `hidden` is no size by its name, but `nn.Linear(dim, hidden)` makes it one
    assert found["GatedMlp"]["status"] == "partial"
    assert found["GatedMlp"]["entry"] == (
        "GatedMlp(dim=32, hidden=32), arguments inferred from their use")


def test_weights_are_off_and_a_broken_entry_point_is_said(checked):
    diagnostics = checked["heads.py"]["diagnostics"]
    # the factory downloads its weights (refused), the class builds with `weights_url` off
    assert modules(checked["heads.py"])["Downloaded"]["entry"] == (
        "Downloaded(weights_url=None), arguments inferred from their use")
    assert not [d for d in diagnostics if d["code"] == "FX101"]
    (broken,) = [d for d in diagnostics if d["code"] == "FX004"]
    assert broken["message"] == ("the entry point `minizoo.models.heads:build_broken` raised "
                                 "ValueError: bad entry point")
    assert broken["range"]["start"] == {"line": 0, "character": 0}
