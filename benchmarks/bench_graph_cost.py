"""What ``fxls graph FILE::Class --format html`` costs next to ``fxls check FILE``.

    .venv/bin/python benchmarks/bench_graph_cost.py [--repeat 3] [--cases vit,resnet,bert,big]

On the same user files: timm ``vit_base_patch16_224``, torchvision ``resnet50`` and a
2-layer Hugging Face BERT, each inside a user's class (the model zoo's site,
``~/.cache/fxls-model-zoo/site``, is put on PYTHONPATH; a case whose library is missing is
skipped), and the 5,055-node generated model (``benchmarks/graph_models.py``). Every run is
a fresh CLI process, check and graph alternating run by run: first analysing the file
(``FXLS_NO_CACHE=1``), then answering from the result cache (a temporary one, filled by a
check first). Wall: the process's lifetime; CPU: user + system time of the process and of
every process it started (the worker, its job processes), read from ``/proc`` every 0.1 s.
Also printed: the page's size and the share of it that the document's ``sources`` take.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.graph_models import BERT_BRANCHED as BERT  # noqa: E402
from benchmarks.graph_models import VIT, model_source  # noqa: E402
from fxls.graph_view.module_graph import json_for_script  # noqa: E402

ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"

RESNET = """\
import torch
from torch import nn
from torchvision.models import resnet50


class ResNet(nn.Module):
    # fxls: args (torch.randn(1, 3, 224, 224),)
    def __init__(self):
        super().__init__()
        self.net = resnet50()

    def forward(self, x):
        return self.net(x)
"""

#: name -> (file's text, class, the library it needs or None)
CASES = {
    "vit": (VIT, "Vit", "timm"),
    "resnet": (RESNET, "ResNet", "torchvision"),
    "bert": (BERT, "BertClassifier", "transformers"),
    "big": (model_source(10, 28), "Big", None),
}


class TreeCpu:
    """The CPU time of a process and of every process it starts, at any depth, read from
    ``/proc`` every ``interval`` seconds. ``getrusage(RUSAGE_CHILDREN)`` alone misses the
    worker's job processes whenever the worker is stopped before it reaps them."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.tracked = {root}
        self.ticks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, args=(interval,), daemon=True)
        self._thread.start()

    def stop(self) -> float:
        """Stop polling; the seconds counted (a process's last interval may be missed)."""
        self._stop.set()
        self._thread.join()
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    def _poll(self, interval: float) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(interval)

    def _sample(self) -> None:
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    text = Path(f"/proc/{entry}/stat").read_text()
                except OSError:
                    continue
                # after the command's closing parenthesis: state, ppid, ... utime (14), stime
                fields = text[text.rindex(")") + 2:].split()
                stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
        grown = True
        while grown:  # a process started by a tracked one is tracked, even once reparented
            new = {pid for pid, (ppid, _) in stats.items()
                   if ppid in self.tracked and pid not in self.tracked}
            self.tracked |= new
            grown = bool(new)
        for pid in self.tracked & stats.keys():
            self.ticks[pid] = max(self.ticks.get(pid, 0), stats[pid][1])


def run(folder: Path, arguments: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one fxls process, and what it printed."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "fxls", *arguments], cwd=folder,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    tree = TreeCpu(process.pid)
    out, err = process.communicate(timeout=900)
    wall = time.perf_counter() - started
    cpu = tree.stop()
    if process.returncode not in (0, 1):
        raise SystemExit(f"fxls {' '.join(arguments)}: exit {process.returncode}\n{err}")
    return wall, cpu, out


def page_sizes(page: str) -> tuple[int, int]:
    """The page's bytes, and the bytes its document's ``sources`` take."""
    data = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                     page, re.DOTALL)
    sources = json.loads(data.group(1)).get("sources", {}) if data else {}
    return len(page.encode("utf-8")), len(json_for_script(sources)) if sources else 0


def _medians(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, load average {load}"


def measure(folder: Path, name: str, class_name: str, repeat: int,
            env: dict[str, str]) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """``repeat`` runs of check and of graph, alternating: (wall, CPU) per run by command,
    and the last page."""
    times: dict[str, list[tuple[float, float]]] = {"check": [], "graph": []}
    page = ""
    for _ in range(repeat):
        wall, cpu, _ = run(folder, ["check", f"{name}.py", "--no-progress"], env)
        times["check"].append((wall, cpu))
        wall, cpu, page = run(folder, ["graph", f"{name}.py::{class_name}", "--format",
                                       "html"], env)
        times["graph"].append((wall, cpu))
    return times, page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print("| file | nodes | check wall (s) | graph wall (s) | check CPU (s) | graph CPU (s) "
          "| from the cache: check / graph wall (s) | page (KB) | sources (KB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        cached = {**os.environ, "FXLS_CACHE_DIR": str(folder / "cache"), "PYTHONPATH":
                  os.pathsep.join(p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH"))
                                  if p)}
        cached.pop("FXLS_NO_CACHE", None)
        cold = {**cached, "FXLS_NO_CACHE": "1"}
        for name in args.cases.split(","):
            text, class_name, library = CASES[name]
            if library is not None and not (ZOO_SITE / library).is_dir():
                print(f"| {name} | skipped: {library} not in {ZOO_SITE} |")
                continue
            (folder / f"{name}.py").write_text(text, encoding="utf-8")
            times, page = measure(folder, name, class_name, args.repeat, cold)
            run(folder, ["check", f"{name}.py", "--no-progress"], cached)  # fills the cache
            warm, _ = measure(folder, name, class_name, args.repeat, cached)
            data = re.search(r'id="fxls-graph-data">(.*?)</script>', page, re.DOTALL)
            nodes = len(json.loads(data.group(1))["nodes"]) if data else 0
            size, sources = page_sizes(page)
            wall_check, cpu_check = _medians(times["check"])
            wall_graph, cpu_graph = _medians(times["graph"])
            print(f"| {name} | {nodes:,} | {wall_check:.2f} | {wall_graph:.2f} | "
                  f"{cpu_check:.2f} | {cpu_graph:.2f} | {_medians(warm['check'])[0]:.2f} / "
                  f"{_medians(warm['graph'])[0]:.2f} | {size / 1024:,.0f} | "
                  f"{sources / 1024:,.1f} |", flush=True)
            print(f"<!-- {name} runs (wall, cpu): {json.dumps(times)}; from the cache: "
                  f"{json.dumps(warm)} -->", flush=True)


if __name__ == "__main__":
    main()
