"""What `fxls check` costs: worker start, then per file import + trace, warm.

    .venv/bin/python benchmarks/bench_check.py [--repeat N] [--markdown] [--no-sandbox]

Compares a warm worker job on a generated ~300-node model file with the same work done
in-process with torch.fx (exec the file + symbolic_trace), interleaved run by run: the job
sends tracing's diagnostics first (what an editor shows on save), then the complete report
(shapes, backward nodes, FX014). Both arrival times are measured.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fxls.analysis_runs.request import ANALYZE_TARGET, WARM_IMPORTS, WARM_UP, AnalysisRequest  # noqa: E402
from fxls.project.setting_groups import ProjectLayout  # noqa: E402
from fxls.project.settings import Settings  # noqa: E402
from fxls.worker.client import WorkerClient  # noqa: E402


def model_source(blocks: int) -> str:
    body = "\n".join(f"        x = x + self.blocks[{i}](x).relu() * 0.5" for i in range(blocks))
    return (
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(32, 32)\n        self.b = nn.LayerNorm(32)\n\n"
        "    def forward(self, x):\n        return self.b(self.a(x)).sigmoid() * x\n\n\n"
        "class Big(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.inp = nn.Linear(16, 32)\n"
        f"        self.blocks = nn.ModuleList(Block() for _ in range({blocks}))\n\n"
        f"    def forward(self, x):\n        x = self.inp(x)\n{body}\n        return x\n"
    )


def in_process_torch_fx(path: Path, source: str) -> float:
    """The same file's work done the plain way: exec it, construct and symbolic_trace every
    nn.Module class it defines (as fxls does), in this process."""
    import torch
    import torch.fx

    start = time.perf_counter()
    namespace: dict[str, object] = {"__name__": "bench_model"}
    exec(compile(source, str(path), "exec"), namespace)
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, torch.nn.Module) and (
            value.__module__ == "bench_model"
        ):
            gm = torch.fx.symbolic_trace(value())
            assert len(gm.graph.nodes) > 0
    return (time.perf_counter() - start) * 1000


#: jobs run in the sandbox, as `fxls check` and `fxls serve` run them
SANDBOX = {"on": True}


async def measure_examples() -> dict[str, float]:
    """`fxls check examples/` split up: wall time of the command, worker start, and the sum
    over files of import (exec) and trace (construct + trace + rules) inside the jobs."""
    import subprocess

    examples = sorted((REPO / "examples").glob("*.py"))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fxls", "check", "--no-cache", str(REPO / "examples")],
                   capture_output=True, check=False)
    wall = (time.perf_counter() - start) * 1000
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS,  # as `fxls check`
                          sandbox=SANDBOX["on"])
    start = time.perf_counter()
    await client.start()
    worker_start = (time.perf_counter() - start) * 1000
    import_ms = trace_ms = observe_ms = jobs_ms = 0.0
    for path in examples:
        request = AnalysisRequest(str(path), path.read_text(),
                                  Settings(project=ProjectLayout(root=str(REPO))))
        start = time.perf_counter()
        result = await client.run(ANALYZE_TARGET, request.params(), timeout=60,
                                  policy=request.settings.job_policy())
        jobs_ms += (time.perf_counter() - start) * 1000
        if result.status == "ok":
            import_ms += result.value["timings_ms"].get("import", 0.0)
            trace_ms += result.value["timings_ms"].get("trace", 0.0)
            observe_ms += result.value["timings_ms"].get("observe", 0.0)
    await client.close()
    return {"files": len(examples), "wall": wall, "worker_start": worker_start,
            "import": import_ms, "trace": trace_ms, "observe": observe_ms, "jobs": jobs_ms}


async def measure(repeat: int) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp())
    path = folder / "big_model.py"
    source = model_source(40)
    path.write_text(source)
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, warm_up=WARM_UP,
                          sandbox=SANDBOX["on"])
    start = time.perf_counter()
    await client.start()
    worker_start = (time.perf_counter() - start) * 1000
    request = AnalysisRequest(str(path), source, Settings(project=ProjectLayout(root=str(folder))))
    first_ms, job_ms, import_ms, trace_ms, reference, nodes = [], [], [], [], [], 0
    await client.run(ANALYZE_TARGET, request.params(), timeout=60)  # warm-up
    in_process_torch_fx(path, source)
    for _ in range(repeat):
        await asyncio.sleep(0.3)  # an editor's saves are apart: the next job process is ready
        arrivals: list[float] = []
        start = time.perf_counter()
        result = await client.run(
            ANALYZE_TARGET, request.params(), timeout=60,
            on_partial=lambda _, seen=arrivals: seen.append(time.perf_counter()),
            policy=request.settings.job_policy(),
        )
        job_ms.append((time.perf_counter() - start) * 1000)
        assert result.status == "ok", result.error
        first_ms.append((arrivals[0] - start) * 1000)
        timings = result.value["timings_ms"]
        import_ms.append(timings["import"])
        trace_ms.append(timings["trace"])
        nodes = result.value["modules"][-1]["node_count"]
        reference.append(in_process_torch_fx(path, source))
    await client.close()
    return {
        "worker_start": worker_start,
        "first": statistics.median(first_ms),
        "job": statistics.median(job_ms),
        "import": statistics.median(import_ms),
        "trace": statistics.median(trace_ms),
        "reference": statistics.median(reference),
        "first_ratio": statistics.median(
            f / r for f, r in zip(first_ms, reference, strict=True)),
        "job_ratio": statistics.median(j / r for j, r in zip(job_ms, reference, strict=True)),
        "nodes": nodes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="jobs without the sandbox (to measure what it costs)")
    args = parser.parse_args()
    SANDBOX["on"] = not args.no_sandbox
    e = asyncio.run(measure_examples())
    r = asyncio.run(measure(args.repeat))
    rows = [
        ("worker start (python + import torch, once)", r["worker_start"]),
        (f"warm job, {r['nodes']}-node model: diagnostics received", r["first"]),
        ("  of which, in the job: parse + exec of the file", r["import"]),
        ("  of which, in the job: construct + trace + rules (all modules)", r["trace"]),
        ("warm job: complete report received (+ FX020, shapes, backward, FX014, node tables)",
         r["job"]),
        ("in-process exec + construct + torch.fx symbolic_trace of each class (reference)",
         r["reference"]),
    ]
    ratios = (f"diagnostics / in-process torch.fx: {r['first_ratio']:.2f}x; "
              f"complete report / in-process torch.fx: {r['job_ratio']:.2f}x "
              "(medians of per-run ratios)")
    example_rows = [
        (f"`fxls check examples/` ({e['files']} files), wall time of the command", e["wall"]),
        ("  worker start (python + import torch)", e["worker_start"]),
        ("  all jobs, warm worker, one after another", e["jobs"]),
        ("    of which: import (exec) of the files", e["import"]),
        ("    of which: construct + trace + rules of their modules", e["trace"]),
        ("    of which: FX020 matching, example-input runs (shapes, backward, FX014), "
         "node tables", e["observe"]),
    ]
    if args.markdown:
        print("| `fxls check examples/` | ms |\n| --- | ---: |")
        for name, value in example_rows:
            print(f"| {name} | {value:.1f} |")
        print()
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}; median of "
              f"{args.repeat}.\n")
        print("| step | ms |\n| --- | ---: |")
        for name, value in rows:
            print(f"| {name} | {value:.1f} |")
        print(f"\n{ratios}")
        return
    for name, value in [*example_rows, *rows]:
        print(f"{name:62s} {value:8.1f} ms")
    print(ratios)


if __name__ == "__main__":
    main()
