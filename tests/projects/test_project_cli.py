"""``fxls check <package dir>``: every file of a package, several at once; the result does
not depend on how many run at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = {
    "pyproject.toml": '[project]\nname = "pkg"\nversion = "0"\n\n[tool.fxls]\ntimeout = 60\n',
    "pkg/__init__.py": '"""Models."""\n',
    "pkg/layers.py": (
        "import torch\nfrom torch import nn\n\n\n"
        "class Block(nn.Module):\n"
        "    def __init__(self, width: int = 16):\n        super().__init__()\n"
        "        self.fc = nn.Linear(width, width)\n\n"
        "    def forward(self, x):\n        return x + torch.relu(self.fc(x))\n"
    ),
    "pkg/mlp.py": (
        "from torch import nn\n\nfrom pkg.layers import Block\n\n\n"
        "class Mlp(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.inp = nn.Linear(8, 16)\n"
        "        self.blocks = nn.Sequential(Block(), Block())\n\n"
        "    def forward(self, x):\n        return self.blocks(self.inp(x))\n\n\n"
        "class Sized(nn.Module):\n"
        "    def __init__(self, classes):\n        super().__init__()\n"
        "        assert classes % 11 == 0, 'classes: a multiple of 11'\n"
        "        self.fc = nn.Linear(16, classes)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n"
    ),
    "pkg/gate.py": (
        "from torch import nn\n\nfrom pkg.layers import Block\n\n\n"
        "class Gate(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.block = Block(8)\n\n"
        "    def forward(self, x):\n"
        "        if x.sum() > 0:\n            x = self.block(x)\n"
        "        print('traced')\n"
        "        return x\n"
    ),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _check_json(root: Path, jobs: int) -> dict:
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", "--statistics",
               "--no-progress", "--jobs", str(jobs), "pkg"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=root)
    assert done.returncode == 1, done.stderr  # Gate's FX001
    return json.loads(done.stdout)


def test_a_package_folder_is_checked_file_by_file(project: Path) -> None:
    document = _check_json(project, 2)
    assert [f["path"] for f in document["files"]] == [
        "pkg/__init__.py", "pkg/gate.py", "pkg/layers.py", "pkg/mlp.py"
    ]
    codes = {f["path"]: sorted({d["code"] for d in f["diagnostics"]})
             for f in document["files"]}
    assert codes["pkg/gate.py"] == ["FX001", "FX013"]
    assert "FX101" in codes["pkg/mlp.py"]
    statuses = {m["name"]: m["status"] for f in document["files"] for m in f["modules"]}
    assert statuses["Mlp"] == "traced" and statuses["Gate"] == "partial"
    assert statuses["Sized"] == "skipped"


def test_one_job_and_two_jobs_give_the_same_output(project: Path) -> None:
    assert _check_json(project, 1) == _check_json(project, 2)


def test_the_longest_files_start_first() -> None:
    from fxls.analysis_runs.request import AnalysisRequest
    from fxls.analysis_runs.runs import longest_first
    from fxls.project.settings import Settings

    sizes = [10, 300, 0, 120]
    requests = [AnalysisRequest(f"f{i}.py", "x" * n, Settings()) for i, n in enumerate(sizes)]
    assert longest_first(requests) == [1, 3, 0, 2]
