"""Classes without inputs of their own run on what a model of the file gives them (issue 33):
a block whose inputs fxls would guess runs, for export and compile, on the call its model
makes (keyword arguments included), so what export and compile say is about the code as
the model uses it; a model whose trace stopped before its input reached a layer gets what
its first layer takes; an image model too small for 32x32 images gets 224x224; inputs
that do not run eagerly stay "not run"."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

MODELS = '''import torch
import torch.nn as nn


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, mask=None):
        if mask is not None and mask.any():
            x = x * mask
        return self.lin(x)


class Net(nn.Module):
    # fxls: args (torch.randn(2, 4, 8),)
    def __init__(self):
        super().__init__()
        self.block = Masked()

    def forward(self, x):
        return self.block(x, mask=(x > 0).float())


class Cache:  # an object, not a tensor: export cannot take it as an input
    def __init__(self):
        self.seen = []

    def add(self, y):
        print("caching", y.shape)
        self.seen.append(y)
        return y


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, cache=None):
        y = self.lin(x)
        return cache.add(y) if cache is not None else y


class WithCache(nn.Module):
    # fxls: args (torch.randn(2, 8),)
    def __init__(self):
        super().__init__()
        self.block = Cached()

    def forward(self, x):
        return self.block(x, cache=Cache())


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 8)
        self.lin = nn.Linear(8, 8)

    def forward(self, ids=None, embeds=None):  # as Hugging Face's models check theirs
        if (ids is None) == (embeds is None):
            raise ValueError("give exactly one of ids and embeds")
        if ids is not None:
            embeds = self.embed(ids)
        return self.lin(embeds)


class Sized(nn.Module):
    """Built for 224x224 images without saying so (a norm over the last stage's 14x14)."""

    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2d(3, 8, 16, stride=16)
        self.norm = nn.LayerNorm([8, 14, 14])

    def forward(self, images):
        return self.norm(self.patches(images))


class Unfit(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.proj = nn.Linear(5, 8)

    def forward(self, x):
        return self.lin(x) + self.proj(x)
'''


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("inputs_from_models")
    (folder / "models.py").write_text(MODELS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--target", "export,compile", "models.py"],
        capture_output=True, text=True, cwd=folder, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    found: dict[str, Any] = json.loads(done.stdout)["files"][0]
    return found


def _targets(report: dict[str, Any], name: str) -> dict[str, str]:
    (module,) = [m for m in report["modules"] if m["name"] == name]
    return dict(module["targets"])


def _line(fragment: str) -> int:
    return next(number for number, text in enumerate(MODELS.splitlines()) if fragment in text)


def test_a_block_runs_on_the_call_its_model_makes(report: dict[str, Any]) -> None:
    """With the guess (no mask) nothing fails; the model passes ``mask=``: the branch on its
    value fails export and breaks the graph, as torch says of ValueBranch in models.py."""
    assert _targets(report, "Masked") == {"export": "failed: 1 problem",
                                          "compile": "1 graph break"}
    found = {(d["code"], d["range"]["start"]["line"]) for d in report["diagnostics"]
             if d["module"] == "Masked"}
    assert found == {("FX201", _line("mask.any()")), ("FX301", _line("mask.any()"))}


def test_a_call_that_passes_an_object_is_compiled_and_its_own_inputs_exported(
        report: dict[str, Any]) -> None:
    """dynamo takes the cache its model passes (and breaks at its ``print``); export cannot
    take an object as an input: it runs on the inputs fxls found for the class itself."""
    assert _targets(report, "Cached") == {"export": "exported", "compile": "1 graph break"}
    (found,) = [d for d in report["diagnostics"] if d["module"] == "Cached"]
    assert (found["code"], found["range"]["start"]["line"]) == ("FX301", _line('print("caching"'))


def test_a_model_gets_what_its_first_layer_takes(report: dict[str, Any]) -> None:
    assert _targets(report, "Tokens") == {"export": "exported", "compile": "compiled"}


def test_an_image_model_too_small_for_32x32_gets_224x224(report: dict[str, Any]) -> None:
    """Small images first (fast); a model they do not fit, and that does not say its own
    size, runs on the size most image models are built for."""
    assert _targets(report, "Sized") == {"export": "exported", "compile": "compiled"}
    assert not [d for d in report["diagnostics"] if d["module"] == "Sized"]


def test_inputs_that_do_not_run_eagerly_stay_not_run(report: dict[str, Any]) -> None:
    assert all(status.startswith("not run: the module raises")
               for status in _targets(report, "Unfit").values())
    assert not [d for d in report["diagnostics"] if d["module"] == "Unfit"]


# 960M parameters: more than the build's memory budget, so fxls builds it on the meta device
BIG = """from torch import nn


class Big(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(8000, 60000)
        self.head = nn.Linear(60000, 10)

    def forward(self, x):
        return self.head(self.wide(x))
"""


def test_a_model_built_on_the_meta_device_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Its inputs are real tensors, its parameters are not: no run, and the reason is that
    (it was "the module raises on the example inputs")."""
    (tmp_path / "big.py").write_text(BIG, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--target", "export,compile", "big.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)["files"][0]
    assert _targets(found, "Big") == {
        "export": "not run: the instance was built on the meta device",
        "compile": "not run: the instance was built on the meta device"}
