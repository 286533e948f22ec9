"""``fxls graph FILE::Class``: the graph of a traced class, or why there is none and what
makes fxls build it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

MODELS = (
    "import torch\nfrom torch import nn\n\n\n"
    "class Mlp(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(8, 4)\n\n"
    "    def forward(self, x):\n        return self.fc(x).relu()\n\n\n"
    "class Sized(nn.Module):\n"
    "    def __init__(self, config):\n        super().__init__()\n"
    "        if getattr(config, 'release', None) != '2024.1':\n"
    "            raise ValueError('config: a release config is needed')\n"
    "        self.fc = nn.Linear(config.width, 4)\n\n"
    "    def forward(self, x):\n        return self.fc(x)\n\n\n"
    "class Exploding(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        raise RuntimeError('needs a GPU')\n\n"
    "    def forward(self, x):\n        return x\n"
)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("graph")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 30\n", encoding="utf-8")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    return folder


def _graph(folder: Path, target: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "fxls", "graph", target]
    return subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=folder)


def test_a_traced_class_prints_its_forward(models: Path) -> None:
    done = _graph(models, "models.py::Mlp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("def forward(self, x):")


def test_a_class_that_was_not_constructed_says_why_and_what_to_add(models: Path) -> None:
    done = _graph(models, "models.py::Sized")
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "Sized: not constructed, no graph to show"
    assert lines[1].startswith("  why: ") and "config" in lines[1]
    assert "`# fxls: init config=...` above `class Sized`" in done.stderr
    assert "[tool.fxls]" in done.stderr and "entry_points" in done.stderr


def test_a_class_whose_constructor_raised_names_the_error_and_its_line(models: Path) -> None:
    done = _graph(models, "models.py::Exploding")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "Exploding: failed, no graph to show"
    line = MODELS.splitlines().index("        raise RuntimeError('needs a GPU')") + 1
    assert f"models.py:{line}: FX004" in done.stderr and "needs a GPU" in done.stderr
