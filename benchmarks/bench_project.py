"""`fxls check` on a project folder with one and with two jobs: does the second core help?

    .venv/bin/python benchmarks/bench_project.py [--files 30] [--repeat 5] [--markdown]

Generates a package of model files in a temporary folder (``pkg/__init__.py``,
``pkg/layers.py`` with shared blocks, ``pkg/models/model_NN.py`` with two nn.Module classes
each, most of them importing ``from pkg.layers import ...``), then, interleaved run by run:

- the command, ``fxls check --jobs 1 pkg`` and ``--jobs 2``: wall time, which includes
  the worker's start (python + import torch), the same for both;
- the project phase alone: all files through one warm worker, one or two jobs at a time,
  exactly as ``fxls check`` runs them (``analyze_many``'s semaphore over one client).

Where the time goes is printed too: the worker process's own CPU time per job (forks,
frames) and the average number of jobs running at once.

Speedups are medians of per-run ratios (jobs 1 / jobs 2). The outputs of ``--jobs 1`` and
``--jobs 2`` are compared too: they must be identical.

``--package DIR`` measures a package that exists instead, e.g. torchvision's models where pip
installed them (``--pythonpath`` for the worker: the model zoo's ``site`` folder).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: the speedup two jobs should give on two cores (project phase)
GOAL = 1.7

LAYERS = '''"""Blocks shared by the models."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class ConvBlock(nn.Module):
    def __init__(self, channels: int = 16):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x
'''

#: a model file built on the shared layers (absolute imports, as most projects have them)
MLP_MODEL = '''"""Model {index}: an MLP stack on the shared blocks."""

import torch
from torch import nn

from pkg.layers import Block


class Stack{index}(nn.Module):
    def __init__(self, depth: int = {depth}):
        super().__init__()
        self.inp = nn.Linear(32, 64)
        self.blocks = nn.Sequential(*(Block(64) for _ in range(depth)))
        self.out = nn.Linear(64, 10)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x)))


class Head{index}(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Stack{index}()
        self.scale = nn.Parameter(torch.ones(10))

    def forward(self, x):
        y = self.body(x) * self.scale
{head_body}        return y.softmax(-1)
'''

#: a conv model; some files also import the shared ConvBlock
CONV_MODEL = '''"""Model {index}: a small conv net."""

import torch
from torch import nn
{conv_import}

class Net{index}(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.blocks = nn.ModuleList({block}() for _ in range({depth}))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.fc(torch.flatten(x.mean((2, 3)), 1))


class Local{index}(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 1)

    def forward(self, x):
        return self.conv(x).sigmoid() * x
'''

LOCAL_CONV_BLOCK = '''

class LocalConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        return self.conv(x).relu() + x
'''


def write_package(root: Path, files: int) -> Path:
    """A project folder under ``root``: ``pyproject.toml`` and ``pkg/`` with ``files`` model
    modules. Returns the package folder (what ``fxls check`` is given)."""
    (root / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nversion = "0"\n\n[tool.fxls]\ntimeout = 60\n',
        encoding="utf-8",
    )
    package = root / "pkg"
    (package / "models").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text('"""A model package."""\n', encoding="utf-8")
    (package / "models" / "__init__.py").write_text("", encoding="utf-8")
    (package / "layers.py").write_text(LAYERS, encoding="utf-8")
    for index in range(files):
        depth = 2 + index % 4
        if index % 3 == 2:
            shared = index % 2 == 0
            source = CONV_MODEL.format(
                index=index, depth=depth, block="ConvBlock" if shared else "LocalConv",
                conv_import="\nfrom pkg.layers import ConvBlock\n" if shared else "",
            )
            if not shared:
                source = source.replace("\n\nclass Net", LOCAL_CONV_BLOCK + "\n\nclass Net", 1)
        else:
            # every fifth file has a problem to report (a data-dependent branch: FX001)
            head_body = "        if y.sum() > 0:\n            y = -y\n" if index % 5 == 0 else ""
            source = MLP_MODEL.format(index=index, depth=depth, head_body=head_body)
        (package / "models" / f"model_{index:02d}.py").write_text(source, encoding="utf-8")
    return package


def worker_env(pythonpath: str | None) -> dict[str, str] | None:
    if not pythonpath:
        return None
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (pythonpath, os.environ.get("PYTHONPATH")) if p)}


def run_command(package: Path, jobs: int, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall time (ms) and JSON output of ``fxls check --jobs N --format json``."""
    command = [sys.executable, "-m", "fxls", "check", "--no-cache", "--jobs", str(jobs),
               "--format", "json", "--no-progress", str(package)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=package.parent, env=env,
                          check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode not in (0, 1):
        raise SystemExit(f"fxls check failed ({done.returncode}):\n{done.stderr}")
    return elapsed, done.stdout


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) a process used so far, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def project_phase(
    package: Path, jobs_list: list[int], repeat: int, before_each: Callable[[], object],
    env: dict[str, str] | None = None,
) -> tuple[dict[int, list[float]], dict[int, list[float]], dict[int, list[float]]]:
    """The files through one warm worker, ``jobs`` at a time, as ``analyze_many`` runs them
    (same client, same semaphore); the worker's start is not timed."""
    from fxls.analysis_runs.request import LEARN_IMPORTS, WARM_IMPORTS, WARM_UP
    from fxls.analysis_runs.runs import longest_first, run_analysis
    from fxls.cli import _read_requests
    from fxls.project.files import collect_python_files
    from fxls.worker.client import WorkerClient

    requests = _read_requests(collect_python_files([str(package)]), {})
    times: dict[int, list[float]] = {jobs: [] for jobs in jobs_list}
    #: jobs running at once on average: the jobs' own time summed, over the wall time
    overlap: dict[int, list[float]] = {jobs: [] for jobs in jobs_list}
    #: the worker process's own CPU time per job (ms)
    parent: dict[int, list[float]] = {jobs: [] for jobs in jobs_list}
    # as ``analysis_runs.runs.analyze_many`` makes it
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, learn_imports=LEARN_IMPORTS,
                          sandbox=True, prime=WARM_UP, env=env)
    await client.start()
    try:
        for _ in range(repeat):
            before_each()
            for jobs in jobs_list:
                slots = asyncio.Semaphore(jobs)

                async def one(request, slots=slots):  # type: ignore[no-untyped-def]
                    async with slots:
                        return await run_analysis(client, request)

                assert client.pid is not None
                worker_cpu = cpu_ms(client.pid)
                start = time.perf_counter()
                reports = await asyncio.gather(
                    *(one(requests[i]) for i in longest_first(requests)))
                wall = (time.perf_counter() - start) * 1000
                times[jobs].append(wall)
                parent[jobs].append((cpu_ms(client.pid) - worker_cpu) / len(requests))
                busy = sum(r.timings_ms.get("total", 0.0) for r in reports if r is not None)
                overlap[jobs].append(busy / wall)
                assert all(r is not None for r in reports)
    finally:
        await client.close()
    return times, overlap, parent


def idle_share(seconds: float = 1.0) -> float:
    """Share of the machine's CPU time that was idle over ``seconds`` (Linux /proc/stat)."""

    def read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return values[3] + values[4], sum(values)  # idle + iowait, all

    idle0, total0 = read()
    time.sleep(seconds)
    idle1, total1 = read()
    return (idle1 - idle0) / max(1, total1 - total0)


def wait_for_idle(threshold: float, limit_s: float) -> float:
    """On a shared machine: wait (at most ``limit_s``) until other processes leave both
    cores mostly idle, so that the second job gets a core of its own. The last idle share."""
    deadline = time.monotonic() + limit_s
    share = idle_share()
    while share < threshold and time.monotonic() < deadline:
        share = idle_share()
    return share


def _burn(loops: int) -> None:
    total = 0
    for i in range(loops):
        total += i * i


def machine_scaling(loops: int = 3_000_000) -> float:
    """How much more work two processes get done than one, right now: the machine's own
    ceiling for the speedup (1.0 when another load keeps the second core busy)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    elapsed = {}
    for count in (1, 2):
        processes = [context.Process(target=_burn, args=(loops,)) for _ in range(count)]
        start = time.perf_counter()
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        elapsed[count] = time.perf_counter() - start
    return 2 * elapsed[1] / elapsed[2]


def _ratio_median(slow: list[float], fast: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(slow, fast, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--package", type=Path, help="a package folder to check instead")
    parser.add_argument("--pythonpath", help="PYTHONPATH for the checks (with --package)")
    parser.add_argument(
        "--wait-idle", type=float, default=0.0, metavar="SHARE",
        help="before each pair of runs, wait (up to 2 min) until this share of the CPUs is "
        "idle, e.g. 0.8 on a machine shared with other work",
    )
    options = parser.parse_args()
    idle_before: list[float] = []

    def before_each() -> None:
        if options.wait_idle:
            idle_before.append(wait_for_idle(options.wait_idle, 120.0))

    env = worker_env(options.pythonpath)
    with tempfile.TemporaryDirectory(prefix="fxls-bench-project-") as folder:
        package = options.package or write_package(Path(folder), options.files)
        count = len(list(package.rglob("*.py")))
        command: dict[int, list[float]] = {1: [], 2: []}
        outputs: dict[int, set[str]] = {1: set(), 2: set()}
        scaling = [machine_scaling()]
        for _ in range(options.repeat):
            before_each()
            for jobs in (1, 2):
                elapsed, output = run_command(package, jobs, env)
                command[jobs].append(elapsed)
                outputs[jobs].add(output)
            scaling.append(machine_scaling())
        phase, overlap, parent = asyncio.run(
            project_phase(package, [1, 2], options.repeat, before_each, env))
        scaling.append(machine_scaling())

    identical = len(outputs[1] | outputs[2]) == 1
    rows = [
        (f"`fxls check --jobs N {package.name}/` ({count} files), wall time",
         command[1], command[2]),
        ("project phase: the files through one warm worker", phase[1], phase[2]),
    ]
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}; median of {options.repeat} interleaved runs")
    if options.markdown:
        print(f"Machine: {machine}.\n")
        print("| case | 1 job (ms) | 2 jobs (ms) | speedup |")
        print("| --- | ---: | ---: | ---: |")
        for name, one, two in rows:
            print(f"| {name} | {statistics.median(one):.0f} | {statistics.median(two):.0f} "
                  f"| {_ratio_median(one, two):.2f}x |")
    else:
        print(f"machine: {machine}")
        for name, one, two in rows:
            print(f"{name}: 1 job {statistics.median(one):.0f} ms, 2 jobs "
                  f"{statistics.median(two):.0f} ms, speedup {_ratio_median(one, two):.2f}x")
    speedup = _ratio_median(phase[1], phase[2])
    print("project phase, run by run (1 job / 2 jobs, ms): " + ", ".join(
        f"{a:.0f}/{b:.0f}" for a, b in zip(phase[1], phase[2], strict=True)))
    print(f"\njobs running at once in the project phase (their time summed / wall time): "
          f"{statistics.median(overlap[1]):.2f} with --jobs 1, "
          f"{statistics.median(overlap[2]):.2f} with --jobs 2")
    print(f"the worker process's own CPU time per job (forks, frames): "
          f"{statistics.median(parent[1]):.1f} ms with --jobs 1, "
          f"{statistics.median(parent[2]):.1f} ms with --jobs 2")
    print(f"the machine's own 2-process speedup meanwhile (pure Python, no fxls): "
          f"{statistics.median(scaling):.2f}x (runs: "
          f"{', '.join(f'{x:.2f}' for x in scaling)})")
    if idle_before:
        print("idle share of the CPUs before each pair of runs: "
              f"{', '.join(f'{x:.2f}' for x in idle_before)}")
    print(f"outputs of --jobs 1 and --jobs 2 identical: {identical}")
    print(f"goal: project phase >= {GOAL}x with two jobs: "
          f"{'met' if speedup >= GOAL else 'NOT met'} ({speedup:.2f}x)")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
