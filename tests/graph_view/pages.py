"""The graph pages several test files draw, each built once per test run: timm's ViT (with
timm's fused attention and without it), a Hugging Face BERT and the 5,000-node model of
``benchmarks.graph_models``, as ``fxls graph FILE::Class --format html`` writes them. A ViT
page costs about 7 CPU-seconds and the 5,000-node one several: under pytest-xdist the workers
build into one folder of the run (pytest-xdist's documented ``getbasetemp().parent`` pattern,
a file lock around each build), so the first file that needs a page builds it and the others
read it. The model sources are here once; the tests import them to find their lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from benchmarks.graph_models import VIT, model_source

ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"
NO_TIMM = not (ZOO_SITE / "timm").is_dir()
NO_TRANSFORMERS = not (ZOO_SITE / "transformers").is_dir()
NO_ZOO_REASON = "model zoo not installed (scripts/install_model_zoo.py)"

#: the ViT with its attention as its parts (matmul, softmax), not one fused call
VIT_UNFUSED = VIT.replace("from torch import nn\n", """\
from torch import nn

# the attention as its parts (matmul, softmax), not one fused call
timm.layers.set_fused_attn(False)
""")

BERT = """\
import torch
from torch import nn
from transformers import BertConfig, BertModel


class BertClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64,
                                         num_attention_heads=2, intermediate_size=128,
                                         vocab_size=500), add_pooling_layer=False)
        self.head = nn.Linear(64, 2)

    def forward(self, x):  # fxls: args (torch.randint(0, 500, (2, 16)),)
        return self.head(self.bert(x).last_hidden_state)
"""

#: two blocks and a data-dependent branch: a partial graph with nested modules
NESTED = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).relu() + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = self.blocks(x)
        if h.sum() > 0:
            h = h * 2
        return self.head(h)
"""

BIG = model_source(10, 28)


def zoo_env() -> dict[str, str]:
    """The environment with the model zoo on PYTHONPATH (as tests/realmodels run it)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH")) if p)}


def _run_folder(factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this run shares (one process: its own base folder)."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / "shared-graph-pages"
    folder.mkdir(exist_ok=True)
    return folder


def shared_output(factory: pytest.TempPathFactory, file: str, source: str, target: str,
                  fmt: str = "html", *, zoo: bool = False) -> Path:
    """``fxls graph FILE::target --format fmt`` of ``source`` saved as ``file``, run once
    per run in a folder of its own and read by every test after."""
    folder = _run_folder(factory) / f"{Path(file).stem}-{target}"
    output = folder / Path(file).with_suffix(f".{fmt}").name
    with FileLock(str(folder) + ".lock"):
        if output.is_file():
            return output
        folder.mkdir(exist_ok=True)
        (folder / file).write_text(source, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "fxls", "graph", f"{file}::{target}", "--format", fmt],
            capture_output=True, text=True, timeout=600, cwd=folder,
            env=zoo_env() if zoo else None)
        assert done.returncode == 0, done.stderr[-3000:]
        # written whole under another name first: an output is there complete or not at all
        partial = output.with_suffix(".partial")
        partial.write_text(done.stdout, encoding="utf-8")
        partial.rename(output)
    return output


def shared_page(factory: pytest.TempPathFactory, file: str, source: str, target: str,
                *, zoo: bool = False) -> Path:
    return shared_output(factory, file, source, target, zoo=zoo)


def vit_page(factory: pytest.TempPathFactory) -> Path:
    if NO_TIMM:
        pytest.skip(NO_ZOO_REASON)
    return shared_page(factory, "vit.py", VIT, "Vit", zoo=True)


def vit_unfused_page(factory: pytest.TempPathFactory) -> Path:
    if NO_TIMM:
        pytest.skip(NO_ZOO_REASON)
    return shared_page(factory, "vit_unfused.py", VIT_UNFUSED, "Vit", zoo=True)


def bert_page(factory: pytest.TempPathFactory) -> Path:
    if NO_TRANSFORMERS:
        pytest.skip(NO_ZOO_REASON)
    return shared_page(factory, "bert.py", BERT, "BertClassifier", zoo=True)


def big_page(factory: pytest.TempPathFactory) -> Path:
    """The 5,000-node model's page; its source is ``BIG``, saved beside it as big.py."""
    return shared_page(factory, "big.py", BIG, "Big")


def nested_json(factory: pytest.TempPathFactory) -> Path:
    """``fxls graph net.py::Net --format json`` of ``NESTED``, saved beside net.py."""
    return shared_output(factory, "net.py", NESTED, "Net", "json")
