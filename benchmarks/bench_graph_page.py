"""How fast the graph page opens and expands, in headless Chromium.

    .venv/bin/python benchmarks/bench_graph_page.py [--stages 10 --depth 28] [--repeat 5]

Writes the page of a generated model (``stages * (depth * 18 + 1) + 6`` nodes: 5,046 by
default) with ``fxls graph FILE::Big --format html``, then drives it with
``scripts/graph_page_browser.cjs`` (playwright-core from editors/vscode/node_modules, the
system's chromium): ``repeat`` loads of the page, each followed by the expansion of the
first closed group, then of the first closed group inside it, four levels down (a stage,
its blocks, a block, its attention), and one "Expand all". Times are the page's own clock:
open = navigation start to the first drawn view (``performance.mark("fxls-drawn")``, after
the HTML, the JSON and the layout);
expand = the click event to the next frame after the handler ran (layout, SVG, style).
The first load of a fresh browser is reported apart (cold caches, JIT).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.graph_models import model_source  # noqa: E402

DRIVER = REPO / "scripts" / "graph_page_browser.cjs"
NODE_MODULES = REPO / "editors" / "vscode" / "node_modules"
#: after each load: expand the first closed group, then the first inside it, ...
DEPTH = 4


def write_page(folder: Path, stages: int, depth: int) -> tuple[Path, float]:
    (folder / "big.py").write_text(model_source(stages, depth), encoding="utf-8")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", "big.py::Big", "--format",
                           "html"], cwd=folder, capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    page = folder / "big.html"
    page.write_text(done.stdout, encoding="utf-8")
    return page, elapsed


def drive(page: Path, repeat: int) -> dict:
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}
    done = subprocess.run(["node", str(DRIVER), str(page), "--repeat", str(repeat),
                           "--expand-depth", str(DEPTH), "--expand-all"],
                          capture_output=True, text=True, timeout=1800, env=env)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    chromium = subprocess.run(["/usr/bin/chromium", "--version"], capture_output=True,
                              text=True).stdout.strip()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores, load average {load}; {chromium}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=10)
    parser.add_argument("--depth", type=int, default=28)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        page, trace_s = write_page(Path(tmp), args.stages, args.depth)
        size_mb = page.stat().st_size / 1e6
        result = drive(page, args.repeat)
    loads = [load["readyMs"] for load in result["loads"]]
    levels = [result["expansions"][i::DEPTH] for i in range(DEPTH)]
    def ms(values: list[float]) -> str:
        return (f"median {statistics.median(values):.0f} ms "
                f"(min {min(values):.0f}, max {max(values):.0f}, n={len(values)})")

    print(f"machine: {machine()}")
    print(f"model: {result['total']} nodes; page {size_mb:.1f} MB, written in {trace_s:.1f} s "
          "(fxls graph: trace + shapes)")
    print(f"open collapsed, first load of a fresh browser: {loads[0]:.0f} ms")
    if len(loads) > 1:
        print(f"open collapsed, reloads: {ms(loads[1:])}")
    print(f"  shown at first: {len(result['collapsed']['nodes'])} nodes, "
          f"{len(result['collapsed']['groups'])} closed groups")
    for level in levels:
        if not level:
            continue
        print(f"expand {level[0]['group']} ({level[0]['shownAfter']} nodes and "
              f"{level[0]['groupsAfter']} closed groups shown after): "
              f"{ms([e['clickToFrameMs'] for e in level])}")
    expand_all = result["expandAll"]
    print(f"expand all ({expand_all['shownNodes']} nodes shown): {expand_all['renderMs']:.0f} ms "
          f"in the handler (of which dagre {expand_all['layoutMs']:.0f} ms for "
          f"{expand_all['groupsLaidOut']} distinct group layouts); click to all drawn, "
          f"seen from the driver: {expand_all['wallMs']:.0f} ms")


if __name__ == "__main__":
    main()
