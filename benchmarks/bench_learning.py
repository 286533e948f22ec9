"""Learned libraries on and off: save -> first diagnostics on user files that import real model
libraries (issue 23), through the server's AnalysisService. (bench_libraries.py measures the
same files through `fxls serve` against the in-process torch.fx floor.)

    PYTHONPATH=~/.cache/fxls-model-zoo/site .venv/bin/python benchmarks/bench_learning.py \
        [timm_vit] [hf_bert]

Two user files, one building timm's ViT-S with a head, one a 2-layer transformers BERT, are
analysed through the language server's ``AnalysisService``, which warms up on the file's
folder at start: the file is opened at once or some seconds later (cold open: time from the
start to its first diagnostics), then saved a second apart (time to first diagnostics). With
the in-process floor: the same analysis in one warm process that has the libraries imported
already (the best a worker could do). Skips a library that does not import.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fxls.analysis_runs.request import AnalysisRequest
from fxls.project.setting_groups import JobLimits, ProjectLayout
from fxls.project.settings import Settings
from fxls.server.analysis_service import AnalysisService

FILES = {
    "timm_vit": (
        "timm",
        "import timm\nimport torch\nfrom torch import nn\n\n\n"
        "class Classifier(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = timm.create_model('vit_small_patch16_224', num_classes=0)\n"
        "        self.head = nn.Linear(384, 10)\n\n"
        "    # fxls: args (torch.randn(1, 3, 224, 224),)\n"
        "    def forward(self, x):\n"
        "        return self.head(self.body(x))\n",
    ),
    "hf_bert": (
        "transformers",
        "import torch\nfrom torch import nn\n"
        "from transformers import BertConfig, BertModel\n\n\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,\n"
        "                            intermediate_size=256, vocab_size=1000)\n"
        "        self.bert = BertModel(config)\n"
        "        self.head = nn.Linear(128, 2)\n\n"
        "    # fxls: args (torch.randint(0, 1000, (1, 16)),)\n"
        "    def forward(self, input_ids):\n"
        "        return self.head(self.bert(input_ids).last_hidden_state)\n",
    ),
}
SAVES = 5
#: how long after the server's start the file is opened
SETTLE_S = (0.0, 15.0)

_FLOOR = r"""
import json, sys, time
from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
path, root = sys.argv[1], sys.argv[2]
source = open(path).read()
times = []
for _ in range(4):
    start = time.perf_counter()
    first = []
    analyze_source(path, source, Settings(project=ProjectLayout(root=root)),
                   lambda r: first.append(time.perf_counter()) if not first else None)
    times.append(((first or [time.perf_counter()])[0] - start) * 1000)
print(json.dumps(times))
"""


def floor_ms(path: Path) -> float:
    """Time to first diagnostics in one warm process (the median of the last runs)."""
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(path), str(path.parent)],
                         capture_output=True, text=True, check=True)
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1])[1:])


class _First:
    """When the first diagnostics of an analysis arrived."""

    def __init__(self) -> None:
        self.at: float | None = None

    def __call__(self, _report: object) -> None:
        if self.at is None:
            self.at = time.perf_counter()


async def saves(path: Path, source: str, settle_s: float, learn: bool
                ) -> tuple[float, list[float]]:
    """The server's way: the service warms up on the workspace folder at start; the file is
    opened ``settle_s`` later (0: at once), then saved ``SAVES`` times a second apart.
    ``learn``: the setting ``fxls.worker.learnLibraries`` (off: as before issue 23)."""
    service = AnalysisService(sys.executable, learn_libraries=learn)
    start = time.perf_counter()
    await service.warm([str(path.parent)])
    await asyncio.sleep(settle_s)
    opened = time.perf_counter()
    times = []
    try:
        for _ in range(SAVES + 1):
            first = _First()
            begin = time.perf_counter()
            request = AnalysisRequest(str(path), source,
                                      Settings(project=ProjectLayout(root=str(path.parent)),
                                               limits=JobLimits(timeout=120)))
            report = await service.analyze("bench", request, on_diagnostics=first)
            assert report is not None
            times.append(((first.at or time.perf_counter()) - begin) * 1000)
            await asyncio.sleep(1.0)  # a user's saves are apart: learning happens between
    finally:
        await service.close()
    return (opened - start) * 1000 + times[0], times[1:]


def main() -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory() as folder:
        for name, (library, source) in FILES.items():
            if sys.argv[1:] and name not in sys.argv[1:]:
                continue
            check = subprocess.run([sys.executable, "-c", f"import {library}"],
                                   capture_output=True)
            if check.returncode:
                print(f"{name}: skipped ({library} does not import)")
                continue
            path = Path(folder, name, "model.py")
            path.parent.mkdir()
            path.write_text(source)
            for settle in SETTLE_S:
                for learn in (False, True):  # alternated: the machine's load drifts
                    floor = floor_ms(path)
                    cold, times = asyncio.run(saves(path, source, settle, learn))
                    print(f"{name} learn={learn}: opened {settle:g} s after start: first "
                          f"diagnostics {cold:.0f} ms after start; saves "
                          f"{', '.join(f'{t:.0f}' for t in times)} ms (median "
                          f"{statistics.median(times):.0f}); in-process floor {floor:.0f} ms;"
                          f" goal <= {2 * floor + 60:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
