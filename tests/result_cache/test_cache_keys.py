"""What makes ``fxls check`` analyse a file again instead of reading its result from the
cache: its text, a workspace file it imports (through other files too), its settings and
targets, a file target inference reads, fxls's own code, the installed libraries; and
``--no-cache`` / ``FXLS_NO_CACHE``. The worker is replaced by a recorder: these are about
which files are analysed, not what the analysis says."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from fxls.result_cache import file_fingerprint
from fxls.result_cache.code_version import sources_digest
from fxls.result_cache.environment import environment_digest
from tests.result_cache.checks import RecordedAnalysis

LAYERS = "from torch import nn\n\n\nclass Block(nn.Linear):\n    pass\n"
BLOCKS = ("from torch import nn\n\nfrom .layers import Block\n\n\n"
          "class Stack(nn.Sequential):\n    pass\n")
NET = "from models.blocks import Stack\n\nnet = Stack()\n"
SOLO = "import torch\n\nx = torch.ones(2)\n"
NOTEBOOK = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
     "source": ["import torch\n", "y = torch.zeros(3)\n"]}]})
PYPROJECT = '[tool.fxls]\ntargets = ["symbolic_trace"]\ntimeout = 30\n'
FILES = {"pyproject.toml": PYPROJECT, "models/__init__.py": "", "models/layers.py": LAYERS,
         "models/blocks.py": BLOCKS, "net.py": NET, "solo.py": SOLO, "nb.ipynb": NOTEBOOK}
EVERY_FILE = ["__init__.py", "blocks.py", "layers.py", "nb.ipynb", "net.py", "solo.py"]


@pytest.fixture
def project(tmp_path: Path, recorded: RecordedAnalysis) -> Path:
    """The test's project, checked once: every file's result is in the cache."""
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert recorded.analysed(str(tmp_path)) == EVERY_FILE
    return tmp_path


def test_an_unchanged_project_is_read_from_the_cache(project, recorded):
    assert recorded.analysed(str(project)) == []


def test_an_edited_file_is_analysed_with_every_file_that_imports_it(project, recorded):
    (project / "models/layers.py").write_text(LAYERS + "# edited\n", encoding="utf-8")
    # net.py imports blocks.py, which imports layers.py (relative): both depend on it
    assert recorded.analysed(str(project)) == ["blocks.py", "layers.py", "net.py"]
    assert recorded.analysed(str(project)) == []


def test_a_file_an_import_could_now_find_is_a_change(project, recorded):
    (project / "models/blocks.py").write_text(BLOCKS + "from . import extra\n",
                                              encoding="utf-8")
    assert recorded.analysed(str(project)) == ["blocks.py", "net.py"]
    (project / "models/extra.py").write_text("X = 1\n", encoding="utf-8")
    assert recorded.analysed(str(project)) == ["blocks.py", "extra.py", "net.py"]


def test_a_changed_setting_is_a_miss_for_every_file(project, recorded):
    (project / "pyproject.toml").write_text(PYPROJECT.replace("30", "40"), encoding="utf-8")
    assert recorded.analysed(str(project)) == EVERY_FILE
    assert recorded.analysed(str(project), "--ignore", "FX013") == EVERY_FILE
    assert recorded.analysed(str(project), "--ignore", "FX013") == []


def test_a_changed_targets_list_is_a_miss(project, recorded):
    assert recorded.analysed(str(project), "--target", "export") == EVERY_FILE
    assert recorded.analysed(str(project), "--target", "export,compile") == EVERY_FILE
    assert recorded.analysed(str(project), "--target", "export") == []


def test_inferred_targets_depend_on_the_files_inference_reads(project, recorded):
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 30\n", encoding="utf-8")
    assert recorded.analysed(str(project)) == EVERY_FILE
    # a script at the project's top that compiles: the targets of every file may change
    (project / "train.py").write_text("import torch\n\ntorch.compile(None)\n", encoding="utf-8")
    assert recorded.analysed(str(project)) == [*EVERY_FILE, "train.py"]


def test_no_cache_analyses_every_file_and_keeps_nothing(tmp_path, recorded, monkeypatch):
    (tmp_path / "solo.py").write_text(SOLO, encoding="utf-8")
    assert recorded.analysed(str(tmp_path), "--no-cache") == ["solo.py"]
    monkeypatch.setenv("FXLS_NO_CACHE", "1")
    assert recorded.analysed(str(tmp_path)) == ["solo.py"]
    monkeypatch.delenv("FXLS_NO_CACHE")
    assert recorded.analysed(str(tmp_path)) == ["solo.py"]  # neither run stored it
    assert recorded.analysed(str(tmp_path), "--no-cache") == ["solo.py"]
    assert recorded.analysed(str(tmp_path)) == []


def test_other_fxls_code_is_a_miss(project, recorded, monkeypatch):
    monkeypatch.setattr(file_fingerprint, "code_digest", lambda: "another commit")
    assert recorded.analysed(str(project)) == EVERY_FILE


def test_another_version_of_an_installed_library_is_a_miss(tmp_path, recorded, monkeypatch):
    site = tmp_path / "site"
    (site / "somelib-1.0.dist-info").mkdir(parents=True)
    (tmp_path / "solo.py").write_text(SOLO, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(site))
    assert recorded.analysed(str(tmp_path / "solo.py")) == ["solo.py"]
    assert recorded.analysed(str(tmp_path / "solo.py")) == []
    # in the same process (a server's): the folder's time says it changed
    (site / "somelib-1.0.dist-info").rename(site / "somelib-1.1.dist-info")
    assert recorded.analysed(str(tmp_path / "solo.py")) == ["solo.py"]


def test_fxls_code_is_told_apart_by_its_bytes_not_its_sizes_or_times(tmp_path):
    module = tmp_path / "pkg" / "rules.py"
    module.parent.mkdir()
    module.write_text("LIMIT = 1\n")
    before = sources_digest([str(tmp_path / "pkg")])
    stat = module.stat()
    module.write_text("LIMIT = 2\n")  # another commit: same size, and the same time here
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert sources_digest([str(tmp_path / "pkg")]) != before


def test_another_interpreter_is_asked_and_one_that_cannot_be_is_never_cached(tmp_path,
                                                                             recorded):
    other = tmp_path / "python"
    other.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    other.chmod(0o755)
    assert environment_digest(str(other)) not in (None, environment_digest(sys.executable))
    (tmp_path / "solo.py").write_text(SOLO, encoding="utf-8")
    missing = str(tmp_path / "no-python")
    assert recorded.analysed(str(tmp_path / "solo.py"), "--python", missing) == ["solo.py"]
    assert recorded.analysed(str(tmp_path / "solo.py"), "--python", missing) == ["solo.py"]
