"""Save -> first diagnostics on user files built from real models, beside the in-process floor.

    PYTHONPATH=~/.cache/fxls-model-zoo/site .venv/bin/python benchmarks/bench_first_diagnostics.py \
        [--runs 5] [--models vit,vgg,resnet,bert]

Each model is a user file of one nn.Module wrapping a library model (timm's
``vit_small_patch16_224`` with a head, torchvision's ``vgg16`` and ``resnet50``, a 2-layer
transformers ``BertModel``). In one warm process, run after run and interleaved:

- *first*: ``analyze_source`` from its call to ``on_diagnostics`` (tracing's diagnostics),
  and *complete*: to its return (example-input runs, real weights);
- *floor*: executing the file as a new module + constructing the class on the meta device +
  ``torch.fx.symbolic_trace`` (until it raises, for a model torch.fx cannot trace);
- *built for real* (``--before``): the same analysis with no initialiser skipped, as before
  issue 23 (every model built with its real weights before tracing).

Figures are medians over ``--runs`` after one warm-up run per file. Issue 23's goal:
first <= 2 x floor + 60 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.fx

ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"

MODELS = {
    "vit": ("ViTClassifier", '''import timm
import torch
from torch import nn


class ViTClassifier(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.backbone = timm.create_model("vit_small_patch16_224", pretrained=False,
                                          num_classes=0)
        self.head = nn.Linear(384, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))
'''),
    "vgg": ("VGGFeatures", '''import torch
from torch import nn
from torchvision.models import vgg16


class VGGFeatures(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = vgg16(weights=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
'''),
    "resnet": ("ResNetFeatures", '''import torch
from torch import nn
from torchvision.models import resnet50


class ResNetFeatures(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = resnet50(weights=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
'''),
    "bert": ("TinyBert", '''import torch
from torch import nn
from transformers import BertConfig, BertModel


class TinyBert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                            intermediate_size=256)
        self.bert = BertModel(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids).last_hidden_state
'''),
}


def floor_ms(path: Path, class_name: str, run: int) -> tuple[float, bool]:
    """Exec + meta construction + torch.fx trace; whether torch.fx traced it."""
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location(f"_floor_{path.stem}_{run}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        instance = getattr(module, class_name)()
    try:
        torch.fx.symbolic_trace(instance)
        traced = True
    except Exception:
        traced = False
    return (time.perf_counter() - started) * 1000, traced


@contextlib.contextmanager
def _nothing_skipped(budget: object = None) -> Iterator[Callable[[], int]]:
    yield lambda: 0


def analysis_ms(path: Path, real_build: bool = False) -> tuple[float, float, dict[str, float]]:
    import fxls.analysis.construction as construction
    from fxls.analysis.pipeline import analyze_source
    from fxls.project.setting_groups import ProjectLayout
    from fxls.project.settings import Settings

    skipping = construction.initialisers_skipped
    if real_build:  # a build that skipped nothing is a real one
        construction.initialisers_skipped = _nothing_skipped

    source = path.read_text(encoding="utf-8")
    first: list[float] = []
    started = time.perf_counter()
    try:
        report = analyze_source(str(path), source,
                                Settings(project=ProjectLayout(root=str(path.parent))),
                                lambda _: first.append(time.perf_counter()))
    finally:
        construction.initialisers_skipped = skipping
    done = time.perf_counter()
    return (first[0] - started) * 1000, (done - started) * 1000, report.timings_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--before", action="store_true",
                        help="also the analysis with every model built for real, interleaved")
    options = parser.parse_args()
    sys.path.insert(0, str(ZOO))
    print(f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"torch {torch.__version__}, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        for key in options.models.split(","):
            class_name, source = MODELS[key]
            path = Path(folder) / f"user_{key}.py"
            path.write_text(source, encoding="utf-8")
            analysis_ms(path)  # warm: the library's imports, torch's first calls
            firsts, completes, floors, before_firsts, before_completes = [], [], [], [], []
            traced = False
            parts: dict[str, list[float]] = {}
            for run in range(options.runs):
                first, complete, timings = analysis_ms(path)
                floor, traced = floor_ms(path, class_name, run)
                firsts.append(first)
                completes.append(complete)
                floors.append(floor)
                if options.before:
                    first, complete, _ = analysis_ms(path, real_build=True)
                    before_firsts.append(first)
                    before_completes.append(complete)
                for name, value in timings.items():
                    parts.setdefault(name, []).append(value)
            first, floor = statistics.median(firsts), statistics.median(floors)
            shown = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in parts.items())
            print(f"{key}: first diagnostics {first:.0f} ms (min {min(firsts):.0f}), "
                  f"complete {statistics.median(completes):.0f} ms (min {min(completes):.0f}), "
                  f"floor {floor:.0f} ms (min {min(floors):.0f})"
                  f"{'' if traced else ' (torch.fx raises)'}; goal 2 x floor + 60 = "
                  f"{2 * floor + 60:.0f} ms: {'met' if first <= 2 * floor + 60 else 'not met'}"
                  f"; job: {shown}; load {os.getloadavg()[0]:.2f}")
            if options.before:
                print(f"{key} built for real: first diagnostics "
                      f"{statistics.median(before_firsts):.0f} ms (min {min(before_firsts):.0f}),"
                      f" complete {statistics.median(before_completes):.0f} ms "
                      f"(min {min(before_completes):.0f})")


if __name__ == "__main__":
    main()
