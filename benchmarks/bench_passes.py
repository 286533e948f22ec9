"""What a file's FX passes add to save -> complete report, on a ~500-node graph.

    .venv/bin/python benchmarks/bench_passes.py [--repeat N] [--blocks B] [--markdown]
        [--torchvision NAME] [--profile OUT.prof]

Two files in one temporary folder, analysed by the same warm worker (as `fxls serve` runs a
save), alternating run by run: a generated residual conv-bn-relu model (``--blocks`` blocks of
7 nodes: ~500 nodes with 70) with four passes as people write them — torch's own
``torch.fx.experimental.optimization.fuse`` called from a pass function, the FX tutorial's
conv-bn fuser (``fuse(model: nn.Module)``, traces inside), an ``fx.Transformer`` (relu ->
gelu) and ``subgraph_rewriter.replace_pattern`` — and the same file without the passes.
Prints medians of save -> first diagnostics, -> the models' complete report (a file with
passes sends it before they run) and -> the report with the passes (the job's wall time), of
the job's own phases (``timings_ms``), and the medians of the per-pair ratios.
``--torchvision resnet50`` uses that torchvision model instead (the model zoo must be
installed: ``scripts/install_model_zoo.py``). ``--profile OUT.prof`` also runs the file with
the passes in this process under cProfile (a warm-up first) and prints where the pass phase's
time goes.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"

from fxls.analysis_runs.request import ANALYZE_TARGET, WARM_IMPORTS, WARM_UP, AnalysisRequest  # noqa: E402
from fxls.project.setting_groups import ProjectLayout  # noqa: E402
from fxls.project.settings import Settings  # noqa: E402
from fxls.worker.client import WorkerClient  # noqa: E402


def generated_model(blocks: int) -> str:
    return f'''import copy

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + x)


# fxls: args (torch.randn(1, 3, 16, 16),)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(8), nn.ReLU())
        self.blocks = nn.Sequential(*(Block(8) for _ in range({blocks})))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
'''


def torchvision_model(name: str) -> str:
    return f'''import copy

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torchvision.models import {name}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = {name}()

    def forward(self, x):
        return self.body(x)
'''


PASSES = '''

from torch.fx import subgraph_rewriter
from torch.fx.experimental.optimization import fuse as torch_fuse


def fuse_with_torch(gm: fx.GraphModule) -> fx.GraphModule:
    return torch_fuse(gm)


def _parent_name(target: str) -> tuple[str, str]:
    *parent, name = target.rsplit(".", 1)
    return parent[0] if parent else "", name


def fuse(model: nn.Module) -> nn.Module:
    model = copy.deepcopy(model)
    fx_model: fx.GraphModule = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or not isinstance(modules[conv_node.target], nn.Conv2d):
            continue
        if len(conv_node.users) > 1:
            continue
        fused_conv = fuse_conv_bn_eval(modules[conv_node.target], modules[node.target])
        parent_name, name = _parent_name(conv_node.target)
        setattr(modules[parent_name], name, fused_conv)
        node.replace_all_uses_with(conv_node)
        fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.delete_all_unused_submodules()
    fx_model.recompile()
    return fx_model


class ReluToGelu(fx.Transformer):
    def call_module(self, target, args, kwargs):
        if isinstance(self.fetch_attr(target), nn.ReLU):
            return super().call_function(F.gelu, args, {})
        return super().call_module(target, args, kwargs)


def pattern(x):
    return torch.flatten(x, 1)


def replacement(x):
    return x.reshape(x.size(0), -1)


def flatten_to_reshape(gm: fx.GraphModule) -> fx.GraphModule:
    subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    return gm
'''

PHASES = ("import", "construct", "trace", "diagnostics", "observe", "models", "passes", "total")


async def measure(model: str, repeat: int, pause: float) -> dict[str, object]:
    folder = Path(tempfile.mkdtemp())
    files = {"plain": model, "passes": model + PASSES}
    requests = {}
    for key, text in files.items():
        path = folder / f"model_{key}.py"
        path.write_text(text)
        requests[key] = AnalysisRequest(str(path), text,
                                        Settings(project=ProjectLayout(root=str(folder))))
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, warm_up=WARM_UP)
    await client.start()

    async def job(key: str) -> tuple[float, float, dict, float]:
        request = requests[key]
        arrivals: list[float] = []
        start = time.perf_counter()
        result = await client.run(
            ANALYZE_TARGET, request.params(), timeout=300,
            on_partial=lambda _, seen=arrivals: seen.append(time.perf_counter()),
            policy=request.settings.job_policy())
        done = (time.perf_counter() - start) * 1000
        assert result.status == "ok", result.error
        first = (arrivals[0] - start) * 1000 if arrivals else done
        # a file with passes sends the models' complete report before its passes run
        complete = (arrivals[1] - start) * 1000 if len(arrivals) > 1 else done
        return first, done, result.value, complete

    for key in files:  # warm-up: imports, first traces
        await job(key)
    runs: dict[str, list[tuple[float, float, dict, float]]] = {"plain": [], "passes": []}
    for index in range(repeat):
        order = ("plain", "passes") if index % 2 == 0 else ("passes", "plain")
        for key in order:
            await asyncio.sleep(pause)  # saves are apart: the next job process is ready
            runs[key].append(await job(key))
    await client.close()
    report = runs["passes"][-1][2]
    diagnostics = [(d["code"], d["span"]["line"]) for d in report["diagnostics"]]
    modules = {m["name"]: m.get("node_count") for m in report["modules"]}
    passes = [(p["name"], [(r["graph"], len(r.get("added", [])), len(r.get("removed", [])),
                            r.get("problem")) for r in p["runs"]]) for p in report["passes"]]
    out: dict[str, object] = {"diagnostics": diagnostics, "modules": modules,
                              "pass_runs": passes}
    for key, values in runs.items():
        out[f"{key}_first"] = statistics.median(v[0] for v in values)
        out[f"{key}_done"] = statistics.median(v[1] for v in values)
        out[f"{key}_complete"] = statistics.median(v[3] for v in values)
        out[f"{key}_done_all"] = [round(v[1]) for v in values]
        out[f"{key}_complete_all"] = [round(v[3]) for v in values]
        for phase in PHASES:
            out[f"{key}_{phase}"] = statistics.median(
                v[2]["timings_ms"].get(phase, 0.0) for v in values)
    out["ratio"] = statistics.median(
        p[1] / q[1] for p, q in zip(runs["passes"], runs["plain"], strict=True))
    out["complete_ratio"] = statistics.median(
        p[3] / q[3] for p, q in zip(runs["passes"], runs["plain"], strict=True))
    out["first_ratio"] = statistics.median(
        p[0] / q[0] for p, q in zip(runs["passes"], runs["plain"], strict=True))
    return out


def profile(model: str, out: str) -> None:
    """The file with passes analysed in this process under cProfile (after a warm-up)."""
    import cProfile
    import pstats

    from fxls.analysis.pipeline import analyze_source

    folder = Path(tempfile.mkdtemp())
    path = folder / "model_passes.py"
    text = model + PASSES
    path.write_text(text)
    settings = Settings(project=ProjectLayout(root=str(folder)))
    analyze_source(str(path), text, settings)
    profiler = cProfile.Profile()
    profiler.enable()
    report = analyze_source(str(path), text, settings)
    profiler.disable()
    profiler.dump_stats(out)
    print({k: round(v) for k, v in report.timings_ms.items()})
    stats = pstats.Stats(profiler).sort_stats("cumulative")
    stats.print_stats(r"passes/|interop|deepcopy|compare_outputs|_max_difference|pipeline", 40)


def breakdown(model: str, repeat: int) -> dict[str, float]:
    """Where the pass phase's time goes, in this process (medians over ``repeat`` analyses
    after a warm-up): the runner's steps timed by wrapping them, then each pass re-run on a
    fresh torch.fx copy with and without the edit recording."""
    import copy

    from fxls.analysis import pipeline
    from fxls.analysis.passes import runner
    from fxls.analysis.passes.discovery import PassKind
    from fxls.analysis.passes.edits import EditLog
    from fxls.analysis.pipeline import pass_stage

    folder = Path(tempfile.mkdtemp())
    path = folder / "model_passes.py"
    text = model + PASSES
    path.write_text(text)
    settings = Settings(project=ProjectLayout(root=str(folder)))
    spent: dict[str, float] = {}
    captured: dict[str, object] = {}

    def timed(name: str, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + (time.perf_counter() - start) * 1000
        return wrapper

    steps = {"_fresh": "deep copy of the fxcore GraphModule + to_torch_fx",
             "_call": "the pass itself, recorded (incl. the module pass's own trace)",
             "_snapshot": "before/after snapshots (node names, targets, args as text)",
             "_code_of": "before/after code (python_code twice)",
             "lint_graph": "lint (FX005/FX006)", "unused_nodes": "FX010",
             "_changed_nodes": "changed nodes for hover", "_stale_result": "FX007"}
    originals = {name: getattr(runner, name) for name in steps}
    for name in steps:
        setattr(runner, name, timed(name, originals[name]))
    original_fresh_copy = runner.copy.deepcopy
    to_torch_fx_module = __import__("fxcore.interop", fromlist=["to_torch_fx"])
    original_to_torch_fx = to_torch_fx_module.to_torch_fx
    to_torch_fx_module.to_torch_fx = timed("to_torch_fx", original_to_torch_fx)
    original_run_passes = runner.run_passes

    def run_passes(specs, subjects, *rest):
        captured["specs"], captured["subjects"] = specs, subjects
        return timed("run_passes", original_run_passes)(specs, subjects, *rest)

    pipeline_run = sys.modules["fxls.analysis.passes"]
    pipeline_run.run_passes = run_passes  # type: ignore[attr-defined]
    pass_stage.compare_outputs = timed("compare_outputs", pass_stage.compare_outputs)
    totals: dict[str, list[float]] = {}
    collecting: list[float] = []

    def on_gc(phase: str, info: dict) -> None:  # time spent in the garbage collector
        if phase == "start":
            collecting.append(time.perf_counter())
        elif collecting:
            spent["garbage collection (whole analysis)"] = spent.get(
                "garbage collection (whole analysis)", 0.0) + (
                time.perf_counter() - collecting.pop()) * 1000

    import gc

    gc.callbacks.append(on_gc)
    try:
        for index in range(repeat + 1):
            gc.collect()
            gc.freeze()  # as a job process forked from the worker's frozen heap starts
            spent.clear()
            report = pipeline.analyze_source(str(path), text, settings)
            if index == 0:
                continue  # warm-up
            spent["passes phase (timings_ms)"] = report.timings_ms["passes"]
            spent["total (timings_ms)"] = report.timings_ms["total"]
            for name, value in spent.items():
                totals.setdefault(name, []).append(value)
    finally:
        gc.callbacks.remove(on_gc)
        gc.unfreeze()
        for name, function in originals.items():
            setattr(runner, name, function)
        to_torch_fx_module.to_torch_fx = original_to_torch_fx
        pipeline_run.run_passes = original_run_passes  # type: ignore[attr-defined]
    assert runner.copy.deepcopy is original_fresh_copy
    result = {name: statistics.median(values) for name, values in totals.items()}
    # the instance copies of module passes: the rest of _run_one outside the steps above
    # each pass on a fresh torch.fx copy, recorded (as fxls runs it) and bare
    specs, subjects = captured["specs"], captured["subjects"]
    recorded: list[float] = []
    bare: list[float] = []
    copies: list[float] = []
    for _ in range(repeat):
        gc.collect()
        gc.freeze()
        for recording, sink in ((True, recorded), (False, bare)):
            elapsed = 0.0
            for spec in specs:  # type: ignore[union-attr]
                for subject in subjects:  # type: ignore[union-attr]
                    fresh = original_to_torch_fx(copy.deepcopy(subject.graph_module))
                    start = time.perf_counter()
                    instance = (copy.deepcopy(subject.instance)
                                if spec.kind is PassKind.MODULE else None)
                    if recording:
                        copies.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    if recording:
                        log = EditLog(lambda name: name == str(path))
                        with log.active():
                            runner._call(spec, fresh, instance, None)
                    else:
                        runner._call(spec, fresh, instance, None)
                    elapsed += (time.perf_counter() - start) * 1000
            sink.append(elapsed)
    result["passes re-run, recorded"] = statistics.median(recorded)
    result["passes re-run, bare torch.fx"] = statistics.median(bare)
    result["deep copy of the instance, module passes"] = sum(copies) / repeat
    result["_steps"] = steps  # type: ignore[assignment]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--blocks", type=int, default=70)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--torchvision", metavar="NAME", default=None)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--profile", metavar="OUT", default=None)
    parser.add_argument("--breakdown", action="store_true",
                        help="where the pass phase's time goes, in this process")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    if args.torchvision:
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH")) if p)
        sys.path.insert(0, str(ZOO_SITE))
        model, label = torchvision_model(args.torchvision), f"torchvision {args.torchvision}"
    else:
        model, label = generated_model(args.blocks), f"generated, {args.blocks} blocks"
    if args.profile:
        profile(model, args.profile)
        return
    if args.breakdown:
        parts = breakdown(model, args.repeat)
        steps = parts.pop("_steps")
        print(f"| {label}: in-process step, median of {args.repeat} | ms |\n| --- | ---: |")
        for name, value in parts.items():
            print(f"| {steps.get(name, name)} | {value:.1f} |")  # type: ignore[union-attr]
        return
    r = asyncio.run(measure(model, args.repeat, args.pause))
    nodes = r["modules"].get("Net")  # type: ignore[union-attr]
    if args.markdown:
        print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}; {label} ({nodes} nodes), {args.repeat} runs of "
              "each file, alternating, one warm worker.\n")
        print("| ms (median) | without passes | with 4 passes | added |")
        print("| --- | ---: | ---: | ---: |")
        rows = [("save -> first diagnostics", "first"),
                ("save -> complete report of the models", "complete"),
                ("save -> report with the passes (job wall time)", "done"),
                *((f"in the job: {phase}", phase) for phase in PHASES)]
        for name, key in rows:
            plain, passes = r[f"plain_{key}"], r[f"passes_{key}"]
            print(f"| {name} | {plain:.0f} | {passes:.0f} | {passes - plain:+.0f} |")
        print(f"\ncomplete report of the models with / without passes: "
              f"**{r['complete_ratio']:.2f}x**; first diagnostics {r['first_ratio']:.2f}x; "
              f"report with the passes {r['ratio']:.2f}x (medians of per-pair ratios).")
        print(f"\nrun by run (ms), without: {r['plain_done_all']}; with, the models' complete "
              f"report: {r['passes_complete_all']}; with, the passes' report: "
              f"{r['passes_done_all']}")
        print(f"\ndiagnostics of the file with passes: {r['diagnostics']}; passes: "
              f"{r['pass_runs']}")
        return
    for key, value in r.items():
        print(f"{key:24s} {value if not isinstance(value, float) else round(value, 1)}")


if __name__ == "__main__":
    main()
