"""A real model file in a warm worker: how long one check of it takes, and where the time goes.

    .venv/bin/python benchmarks/bench_model_file.py [FILES...] [--runs 5]

Default files: timm's resnet.py (dozens of factories) and vision_transformer.py, from the model
zoo (``scripts/install_model_zoo.py``). The worker is the editor's: warm imports, torch modules
learned after the first job. The first run of each file (which imports timm's torch needs and
teaches the worker) is reported apart; the figures are medians of the later runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"
DEFAULT_FILES = ["timm/models/resnet.py", "timm/models/vision_transformer.py"]


async def bench(files: list[Path], runs: int) -> None:
    from fxls.analysis_runs.request import LEARN_IMPORTS, WARM_IMPORTS, AnalysisRequest
    from fxls.analysis_runs.runs import run_analysis
    from fxls.project.settings import load_settings
    from fxls.worker.client import WorkerClient

    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, learn_imports=LEARN_IMPORTS)
    await client.start()
    try:
        for path in files:
            request = AnalysisRequest(str(path), path.read_text(encoding="utf-8"),
                                      load_settings(path, {"timeout": 300}))
            rounds: list[float] = []
            parts: dict[str, list[float]] = {}
            classes = ""
            for index in range(runs + 1):
                started = time.perf_counter()
                report = await run_analysis(client, request)
                elapsed = (time.perf_counter() - started) * 1000
                assert report is not None
                traced = sum(m.status in ("traced", "partial") for m in report.modules)
                classes = f"{traced}/{len(report.modules)} classes traced"
                if index == 0:
                    print(f"{path.name}: first run {elapsed:.0f} ms ({classes})")
                    await asyncio.sleep(3)  # the worker learns torch modules meanwhile
                    continue
                rounds.append(elapsed)
                for key, value in report.timings_ms.items():
                    parts.setdefault(key, []).append(value)
            shown = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in parts.items())
            print(f"{path.name}: median {statistics.median(rounds):.0f} ms round trip over "
                  f"{runs} runs (min {min(rounds):.0f}); job: {shown} ms; {classes}")
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help=f"paths (relative to {ZOO} or absolute)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not ZOO.is_dir():
        print(f"no model zoo in {ZOO}: run scripts/install_model_zoo.py first")
        return
    sys.path.insert(0, str(ZOO))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ZOO),
                                                             os.environ.get("PYTHONPATH")]))
    files = [p if p.is_absolute() else ZOO / p
             for p in map(Path, args.files or DEFAULT_FILES)]
    print(f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}")
    asyncio.run(bench(files, args.runs))


if __name__ == "__main__":
    main()
