"""A second ``fxls check`` of an unchanged folder is served from the cache: no worker is
started, and its output is the fresh run's, byte for byte, in text, JSON and SARIF, a
notebook's cells included (one real analysis for the module)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from fxls import cli
from tests.result_cache.checks import Run, cache_on, check

LAYERS = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        print("block")
        return torch.relu(self.proj(x))
"""
NET = """\
from torch import nn

from layers import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def forward(self, x):
        if x.sum() > 0:
            return self.block(x)
        return x
"""
CELLS = ["import torch\nfrom torch import nn\n",
         "class Gate(nn.Module):\n    def forward(self, x):\n        if x.max() > 1:\n"
         "            return x\n        return -x\n"]
NOTEBOOK = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
     "source": cell.splitlines(True)} for cell in CELLS]})
FORMATS = ("json", "text", "sarif")


class NoWorker:
    def __init__(self, *_: Any, **__: Any) -> None:
        raise AssertionError("a worker was started: a file was analysed again")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cache_folder: Path
         ) -> dict[str, tuple[Run, Run]]:
    """Each format's (fresh run, run from the cache). One analysis: the first check's
    reports are given again to the fresh runs of the other formats (``--no-cache``)."""
    project = tmp_path_factory.mktemp("project")
    for name, text in {"layers.py": LAYERS, "net.py": NET, "gates.ipynb": NOTEBOOK}.items():
        (project / name).write_text(text, encoding="utf-8")
    analyze_many = cli.analyze_many
    fresh: list[Any] = []

    async def analyse_once(requests: list[Any], **options: Any) -> Any:
        if not fresh:
            fresh.append(await analyze_many(requests, **options))
        return copy.deepcopy(fresh[0])

    with pytest.MonkeyPatch.context() as patch:
        cache_on(cache_folder, patch)
        patch.chdir(project)
        patch.setattr(cli, "analyze_many", analyse_once)
        first = {"json": check("--format", "json", ".")}
        first.update({f: check("--no-cache", "--format", f, ".") for f in FORMATS[1:]})
        patch.setattr("fxls.worker.client.WorkerClient", NoWorker)
        patch.setattr(cli, "analyze_many", analyze_many)
        return {f: (first[f], check("--format", f, ".")) for f in FORMATS}


@pytest.mark.parametrize("format_", FORMATS)
def test_a_second_check_prints_the_first_ones_output(runs, format_):
    fresh, cached = runs[format_]
    assert cached.stdout == fresh.stdout
    assert cached.status == fresh.status == 1


def test_the_reports_are_the_analysis_not_empty_ones(runs):
    text = runs["text"][1].stdout
    assert "net.py:12:12: FX001 `x.sum() > 0`" in text
    assert "layers.py:11:9: FX013 `print(...)`" in text
    assert "gates.ipynb:cell 2:3:12: FX001 `x.max() > 1`" in text


def test_the_summary_says_how_many_came_from_the_cache(runs):
    fresh, cached = runs["json"]
    assert "from the cache" not in fresh.stderr
    assert cached.stderr == ("fxls: 3 of 3 files from the cache (unchanged since they were "
                             "checked; --no-cache analyses them again)\n")
