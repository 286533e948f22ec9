"""A user file built from a library, saved again and again, through the worker alone.

    .venv/bin/python benchmarks/bench_library_jobs.py [--only bert] [--saves 12] [--settle 5]

`bench_libraries.py` measures the same saves through `fxls serve`; this drives the worker as
the server does (libraries learned, the workspace's imports warmed) but without LSP and
without quick-fix verification, and prints each job's own phase timings (`timings_ms`) and
the worker's log lines (when a zygote with the libraries is ready). What is left between the
two is the server's share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_libraries  # noqa: E402

from fxls.analysis_runs.request import ANALYZE_TARGET, WARM_IMPORTS, WARM_UP, AnalysisRequest  # noqa: E402
from fxls.project.setting_groups import ProjectLayout  # noqa: E402
from fxls.project.settings import Settings  # noqa: E402
from fxls.server.workspace_imports import workspace_imports  # noqa: E402
from fxls.worker.client import WorkerClient  # noqa: E402


async def run(name: str, source: str, saves: int, settle: float) -> None:
    folder = Path(tempfile.mkdtemp(prefix="fxls-bench-jobs-"))
    path = folder / "classifier.py"
    path.write_text(source)
    began = time.perf_counter()
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, warm_up=WARM_UP,
                          learn_libraries=True)
    await client.start()
    await client.warm(workspace_imports([str(folder)]))
    request = AnalysisRequest(str(path), source, Settings(project=ProjectLayout(root=str(folder))))

    async def job(label: str) -> None:
        arrivals: list[float] = []
        start = time.perf_counter()
        result = await client.run(
            ANALYZE_TARGET, request.params(), timeout=120,
            on_partial=lambda _: arrivals.append(time.perf_counter()),
            policy=request.settings.job_policy())
        done = time.perf_counter()
        first = (arrivals[0] if arrivals else done) - start
        timings = result.value.get("timings_ms", {}) if result.status == "ok" else {}
        phases = " ".join(f"{k}={v:.0f}" for k, v in timings.items())
        print(f"{done - began:7.2f} s  {name} {label}: first {first * 1000:.0f} ms, "
              f"complete {(done - start) * 1000:.0f} ms | {phases}", flush=True)

    await job("open")
    await asyncio.sleep(settle)
    for number in range(saves):
        await asyncio.sleep(0.5)
        await job(f"save {number + 1}")
    await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=12)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--only", help="a substring of the user files' names")
    args = parser.parse_args()
    if not bench_libraries.ZOO_SITE.is_dir():
        sys.exit(f"the model zoo is not installed in {bench_libraries.ZOO_SITE} "
                 "(scripts/install_model_zoo.py)")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(bench_libraries.ZOO_SITE), os.environ.get("PYTHONPATH")]))
    for name, source in bench_libraries.USER_FILES.items():
        if args.only and args.only.lower() not in name.lower():
            continue
        asyncio.run(run(name, source, args.saves, args.settle))


if __name__ == "__main__":
    main()
