"""What the export and compile tiers cost per module, against torch itself.

    PYTHONPATH=~/.cache/fxls-model-zoo/site .venv/bin/python benchmarks/bench_targets.py \
        [--repeat N] [--only bert] [--markdown]

For each user file (one class wrapping a model of the zoo, its inputs in an ``args``
pragma) a worker configured as the language server configures it runs the file's job with
``targets = ["export"]`` and with ``["compile"]``; the job's own clock for the tier
(``timings_ms["torch_tiers"]``) is set beside a direct ``torch.export.export(model,
inputs)`` and ``torch._dynamo.explain(model)(*inputs)`` of the same class and inputs in this
process, warm (the model built and each call made once before), alternating run by run. The
first job of a fresh worker is reported apart: it is the one that pays for importing what
the worker has not learned yet; one more job per target is left untimed while the worker
learns the libraries those imported. Before each timed call the worker's processes are left
to finish what they do between jobs (``_settle``): an editor's saves are seconds apart.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fxls.analysis_runs.request import (  # noqa: E402
    LEARN_IMPORTS,
    WARM_FROM,
    WARM_IMPORTS,
    WARM_UP,
    AnalysisRequest,
)
from fxls.analysis_runs.runs import run_analysis  # noqa: E402
from fxls.project.setting_groups import JobLimits, ProjectLayout, TracerTargets  # noqa: E402
from fxls.project.settings import Settings  # noqa: E402
from fxls.worker.client import WorkerClient  # noqa: E402

ZOO_SITE = Path.home() / ".cache" / "fxls-model-zoo" / "site"

_WRAPPER = '''\
import torch
from torch import nn
{imports}


class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = {build}

    def forward(self, x):  # fxls: args ({inputs},)
        return self.backbone(x){output}
'''


def _user_file(name: str, imports: str, build: str, inputs: str, output: str = "") -> str:
    return _WRAPPER.format(name=name, imports=imports, build=build, inputs=inputs,
                           output=output)


#: name -> (class, source); each file defines one class, the module whose tiers are timed
USER_FILES: dict[str, tuple[str, str]] = {
    "transformers BERT (2 layers)": ("BertClassifier", _user_file(
        "BertClassifier", "from transformers import BertConfig, BertModel",
        "BertModel(BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,\n"
        "                          intermediate_size=256), add_pooling_layer=False)",
        "torch.randint(0, 1000, (2, 16))", ".last_hidden_state")),
    "transformers GPT-2 (2 layers)": ("Gpt2Decoder", _user_file(
        "Gpt2Decoder", "from transformers import GPT2Config, GPT2Model",
        "GPT2Model(GPT2Config(n_layer=2, n_embd=128, n_head=2))",
        "torch.randint(0, 1000, (2, 16))", ".last_hidden_state")),
    "timm ViT-S/16": ("VitClassifier", _user_file(
        "VitClassifier", "import timm",
        'timm.create_model("vit_small_patch16_224", pretrained=False)',
        "torch.randn(1, 3, 224, 224)")),
    "torchvision ResNet-18": ("ResnetClassifier", _user_file(
        "ResnetClassifier", "from torchvision.models import resnet18",
        "resnet18(weights=None)", "torch.randn(1, 3, 224, 224)")),
}

TARGETS = ("export", "compile")


@dataclass
class Figures:
    """One user file's times (ms), per target: the job's tier and torch called directly."""

    name: str
    first_job: dict[str, float] = field(default_factory=dict)
    tier: dict[str, list[float]] = field(default_factory=lambda: {t: [] for t in TARGETS})
    direct: dict[str, list[float]] = field(default_factory=lambda: {t: [] for t in TARGETS})
    statuses: dict[str, str] = field(default_factory=dict)

    def median(self, kind: str, target: str) -> float:
        return statistics.median(getattr(self, kind)[target])

    def ratio(self, target: str) -> float:
        """The median of the per-run ratios (runs alternate: each pair saw the same load)."""
        return statistics.median(t / d for t, d in zip(self.tier[target], self.direct[target],
                                                       strict=True))

    def both_ratio(self) -> float:
        pairs = zip(self.tier["export"], self.tier["compile"], self.direct["export"],
                    self.direct["compile"], strict=True)
        return statistics.median((te + tc) / (de + dc) for te, tc, de, dc in pairs)


def _load_class(source: str, folder: Path, class_name: str) -> type:
    path = folder / "direct_copy.py"
    path.write_text(source)
    namespace: dict[str, Any] = {"__name__": "bench_direct"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace[class_name]


def _inputs(source: str) -> tuple[Any, ...]:
    import torch
    pragma = source.split("# fxls: args ", 1)[1].splitlines()[0]
    return eval(pragma, {"torch": torch})  # our own benchmark's literal


def _direct(target: str, model: Any, inputs: tuple[Any, ...]) -> float:
    import torch
    import torch._dynamo
    start = time.perf_counter()
    if target == "export":
        torch.export.export(model, inputs)
    else:
        torch._dynamo.explain(model)(*inputs)
    return (time.perf_counter() - start) * 1000


async def _job(client: WorkerClient, path: Path, source: str, folder: Path,
               target: str) -> tuple[float, str]:
    settings = Settings(project=ProjectLayout(root=str(folder)),
                        tracers=TracerTargets(targets=(target,)),
                        limits=JobLimits(timeout=300.0))
    report = await run_analysis(client, AnalysisRequest(str(path), source, settings))
    assert report is not None, "the job was cancelled"
    module = next((m for m in report.modules if target in m.targets), None)
    status = module.targets[target] if module is not None else "no module"
    if "torch_tiers" not in report.timings_ms:
        raise RuntimeError(f"{path.name}: no torch tier ran ({status}; "
                           f"{[d.message for d in report.diagnostics][:3]})")
    return report.timings_ms["torch_tiers"], status


#: before each timed call, the worker's processes are left to finish what they do between
#: jobs (the next job process warms up, from the last jobs too: an editor's saves are seconds
#: apart): both sides are timed on a machine where nothing of ours runs beside them
SETTLE_QUIET_MS = 20.0
SETTLE_LIMIT_S = 30.0


def _tree_cpu_ms(root: int) -> float:
    """The CPU time of ``root`` and its descendants so far (ms; /proc)."""
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(p) for p in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


async def _settle(client: WorkerClient) -> None:
    """Wait until the worker's processes used under ``SETTLE_QUIET_MS`` of CPU in 0.5 s."""
    if client.pid is None:
        return
    deadline = time.monotonic() + SETTLE_LIMIT_S
    before = _tree_cpu_ms(client.pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        now = _tree_cpu_ms(client.pid)
        if now - before < SETTLE_QUIET_MS:
            return
        before = now


async def measure(name: str, class_name: str, source: str, repeat: int) -> Figures:
    import torch
    folder = Path(tempfile.mkdtemp(prefix="fxls-bench-targets-"))
    path = folder / "model.py"
    path.write_text(source)
    figures = Figures(name)
    torch.manual_seed(0)
    model = _load_class(source, folder, class_name)().eval()
    inputs = _inputs(source)
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS,  # as the editor's
                          warm_up=WARM_UP, warm_from=WARM_FROM, learn_imports=LEARN_IMPORTS,
                          learn_libraries=True, sandbox=True, roots=(str(folder),))
    await client.start()
    try:
        for target in TARGETS:
            figures.first_job[target], figures.statuses[target] = await _job(
                client, path, source, folder, target)
            _direct(target, model, inputs)  # this process warm too
        for target in TARGETS:  # the worker learns the libraries the first jobs imported
            await _settle(client)
            await _job(client, path, source, folder, target)
        for _ in range(repeat):
            for target in TARGETS:
                await _settle(client)
                figures.tier[target].append((await _job(client, path, source, folder,
                                                        target))[0])
                await _settle(client)
                figures.direct[target].append(_direct(target, model, inputs))
    finally:
        await client.close()
    return figures


def _print_markdown(rows: list[Figures], repeat: int) -> None:
    print("| module | target (status) | first job's tier | tier, warm worker | direct, warm "
          "process | ratio |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for row in rows:
        for target in TARGETS:
            print(f"| {row.name} | {target} ({row.statuses[target]}) | "
                  f"{row.first_job[target]:.0f} ms | {row.median('tier', target):.0f} ms | "
                  f"{row.median('direct', target):.0f} ms | {row.ratio(target):.2f}x |")
        print(f"| {row.name} | both | | | | {row.both_ratio():.2f}x |")
    load = os.getloadavg()[0]
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; medians of {repeat} runs, job and direct call "
          f"alternating; ratio: median of per-run ratios; load average at the end {load:.1f}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="a substring of the user files' names")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if not ZOO_SITE.is_dir():
        sys.exit(f"the model zoo is not installed in {ZOO_SITE} (scripts/install_model_zoo.py)")
    if str(ZOO_SITE) not in sys.path:
        sys.path.insert(0, str(ZOO_SITE))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ZOO_SITE), os.environ.get("PYTHONPATH")]))
    rows = []
    for name, (class_name, source) in USER_FILES.items():
        if args.only and args.only.lower() not in name.lower():
            continue
        row = asyncio.run(measure(name, class_name, source, args.repeat))
        rows.append(row)
        if not args.markdown:
            for target in TARGETS:
                print(f"{name:32s} {target:8s} {row.statuses[target]:18s} first job "
                      f"{row.first_job[target]:7.0f} ms; tier {row.median('tier', target):7.0f}"
                      f" ms, direct {row.median('direct', target):7.0f} ms, ratio "
                      f"{row.ratio(target):.2f}x  (tier {row.tier[target]}, "
                      f"direct {row.direct[target]})", flush=True)
    if args.markdown:
        _print_markdown(rows, args.repeat)


if __name__ == "__main__":
    main()
