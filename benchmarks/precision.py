"""How often fxls's error reports are right, with torch.fx as the ground truth.

    .venv/bin/python scripts/install_model_zoo.py          # once: ~150 MB in ~/.cache
    .venv/bin/python benchmarks/precision.py [--sample | --all | --files F ...]
        [--library all|timm|torchvision|torchvision-models|transformers] [--limit N]
        [--timeout S] [--json OUT] [--zoo DIR] [--load OUT]

For every nn.Module class of each model file, fxls's verdict is compared with torch.fx's:

- fxls's verdict: the class has an error-severity diagnostic (FX001-FX006, FX014) attributed to
  it: the diagnostic's `module` is the class, or the class is in its `also_reached_from` (the
  same problem reached from several classes is reported once). fxls's own analysis runs in a
  child process per file, in process there (`fxls.analysis.pipeline.analyze_source` with the
  file's `load_settings`), inside the installed zoo (the files' real paths).
- the ground truth, on the very instance fxls traced (the child wraps
  `symbolic_trace.trace_class` to keep each class's instance, leaf modules, autowrap functions,
  concrete args and final example inputs): in eval mode, `torch.fx.Tracer` with the same
  autowrap functions and a leaf test that adds fxls's leaf classes (timm's
  `register_notrace_module`s) to torch.fx's own; `torch.fx.wrap` registrations apply by
  themselves. If tracing raises, torch.fx cannot trace the class (a true error). Else the
  GraphModule and the eager module run on the same inputs (fxls's example inputs; else inputs
  inferred from the torch.fx graph as fxls infers them; else the inputs the class gets inside
  another built class), under `torch.no_grad` with the same seed; outputs are compared with
  `allclose(rtol=1e-4, atol=1e-5, equal_nan=True)` (same shapes and dtypes). A mismatch, or a
  graph that raises where eager runs, is a true error; a match means torch.fx traces it right.
  Without inputs eager accepts (or on a meta-device instance) the class is `unverified`.

Prints per file and in total: classes fxls reports an error on, confirmed / wrong / unverified
(precision = confirmed / (confirmed + wrong)); classes torch.fx cannot trace (or traces wrong)
with no fxls error (missed); FX010 warnings, each with its node and whether the node computed
a tensor (its `tensor_meta` after fxls's run on example inputs) for review. Wrong reports and
misses are then grouped by cause. Classes fxls did not construct, or skipped as declared
leaves, have no verdict. Works without the zoo: it says how to install it and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from coverage_real_models import (  # noqa: E402
    DEFAULT_ZOO,
    LIBRARIES,
    reason_key,
    short,
    zoo_files,
)

ERROR_CODES = {"FX001", "FX002", "FX003", "FX004", "FX005", "FX006", "FX014"}
TRUE_ERRORS = ("fx_error", "graph_error", "mismatch")
SEED = 0


# -- the child: one file, fxls's analysis then torch.fx on the same instances ----------------


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


def _raise_site(error: BaseException) -> str | None:
    """The innermost frame of the traceback outside torch itself: where the model code hit
    the problem (``timm/models/beit.py:123``)."""
    frames = traceback.extract_tb(error.__traceback__)
    for frame in reversed(frames):
        name = frame.filename
        if "/torch/" in name or "/fxcore/" in name or name.endswith("precision.py"):
            continue
        parts = Path(name).parts
        for anchor in ("timm", "torchvision"):
            if anchor in parts:
                name = "/".join(parts[parts.index(anchor):])
                break
        return f"{name}:{frame.lineno} ({frame.name})"
    return None


def _run(module: Any, inputs: tuple[Any, ...]) -> tuple[bool, Any]:
    import torch

    try:
        with torch.no_grad():
            torch.manual_seed(SEED)
            return True, module(*copy.deepcopy(inputs))
    except Exception as error:
        return False, _first_line(error)


def _shown(inputs: tuple[Any, ...] | None) -> str:
    import torch

    if inputs is None:
        return "-"
    return ", ".join(
        f"tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else type(v).__name__
        for v in inputs)


class _Seen:
    """What fxls built and traced for one class (captured around ``trace_class``)."""

    def __init__(self, cls: type, file: Any, outcome: Any, result: tuple) -> None:
        self.cls = cls
        self.name = cls.__name__
        self.file = file
        self.outcome = outcome
        self.module_report, _, self.traced = result


def _child(path: str, out: str) -> None:
    import warnings

    warnings.simplefilter("ignore")
    import torch
    import torch.fx

    from fxls.analysis import pipeline
    from fxls.analysis.construction import Built
    from fxls.analysis.inputs import infer_inputs, spatial_size
    from fxls.analysis.pipeline import node_tables, symbolic_trace
    from fxls.analysis.pragmas import ClassPragmas
    from fxls.project.settings import load_settings

    seen: list[_Seen] = []
    original = symbolic_trace.trace_class

    def analyze_class(cls: type, file: Any, outcome: Any) -> tuple:
        result = original(cls, file, outcome)
        seen.append(_Seen(cls, file, outcome, result))
        return result

    symbolic_trace.trace_class = analyze_class
    started = time.perf_counter()
    source = Path(path).read_text(encoding="utf-8")
    report = pipeline.analyze_source(path, source, load_settings(path))
    fxls_s = time.perf_counter() - started
    diagnostics = [_diag_dict(d) for d in report.diagnostics]

    class LeafTracer(torch.fx.Tracer):
        def __init__(self, leaf_names: set[str], autowrap: tuple[Any, ...]) -> None:
            super().__init__(autowrap_functions=autowrap)
            self.leaf_names = leaf_names

        def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
            cls = type(m)
            if f"{cls.__module__}.{cls.__qualname__}" in self.leaf_names:
                return True
            if cls.__name__ in self.leaf_names:  # [tool.fxls] leaf_modules by bare name
                return True
            return super().is_leaf_module(m, qualname)

    real = _real_instances(seen, Built)
    classes: list[dict] = []
    pending: list[tuple[dict, Any, Any]] = []  # (record, instance, torch.fx gm)
    for item in seen:
        record: dict[str, Any] = {
            "name": item.name,
            "status": item.module_report.status,
            "via": item.module_report.via,
            "entry": item.module_report.entry,
            "reason": item.module_report.reason,
        }
        classes.append(record)
        if not isinstance(item.outcome, Built) or item.module_report.status == "skipped":
            record["truth"] = "no instance"  # not constructed, or skipped (a declared leaf)
            continue
        instance = real.get(id(item.outcome.instance), item.outcome.instance)
        if instance is not item.outcome.instance:
            record["rebuilt"] = "a real instance from the same call (fxls traced it on meta)"
        pragmas = item.file.file.pragmas.classes.get(item.name, ClassPragmas())
        concrete = item.traced.ctx.concrete_args if item.traced is not None else None
        if concrete is None and pragmas.concrete:
            try:
                concrete = eval(pragmas.concrete, {**item.file.namespace, "torch": torch})
            except Exception:
                concrete = None
        instance.eval()
        tracer = LeafTracer(set(item.file.leaf_names), tuple(item.file.autowrap))
        try:
            graph = tracer.trace(instance, concrete_args=concrete)
            gm = torch.fx.GraphModule(tracer.root, graph, item.name)
        except Exception as error:
            record.update(truth="fx_error", detail=_first_line(error),
                          site=_raise_site(error))
            continue
        record["fx_nodes"] = len(gm.graph.nodes)
        if _is_meta(instance):
            record.update(truth="unverified", detail="meta-device instance: traced, not run")
            continue
        candidates = []
        if item.traced is not None and item.traced.ctx.example_inputs is not None:
            candidates.append(("fxls", item.traced.ctx.example_inputs))
        for size in (None, spatial_size(instance), (224, 224)):
            try:
                inferred = infer_inputs(gm, size)
            except Exception:
                inferred = None
            if inferred is not None and not any(_same_inputs(inferred, c) for _, c in candidates):
                candidates.append(("inferred", inferred))
        record["_candidates"] = candidates
        pending.append((record, instance, gm))

    # inputs eager accepts: fxls's, inferred, else captured inside a class that runs
    runnable: list[tuple[Any, tuple[Any, ...]]] = []
    lacking: list[tuple[dict, Any, Any]] = []
    for record, instance, gm in pending:
        for source_name, inputs in record.pop("_candidates"):
            ok, eager = _run(instance, inputs)
            if ok:
                record["inputs"] = f"{source_name}: {_shown(inputs)}"
                _compare(record, gm, inputs, eager)
                runnable.append((instance, inputs))
                break
            record["eager_error"] = eager
        else:
            lacking.append((record, instance, gm))
    for container, inputs in runnable:
        inside = [(r, i, g) for r, i, g in lacking
                  if "truth" not in r and any(m is i for m in container.modules())]
        if not inside:
            continue
        captured: dict[int, tuple[Any, ...]] = {}
        handles = [i.register_forward_pre_hook(partial(_keep_inputs, captured, id(i)),
                                               with_kwargs=True)
                   for _, i, _ in inside]
        try:
            _run(container, inputs)
        finally:
            for handle in handles:
                handle.remove()
        for record, instance, gm in inside:
            got = captured.get(id(instance))
            if got is None:
                continue
            ok, eager = _run(instance, got)
            if ok:
                record["inputs"] = f"captured in {type(container).__name__}: {_shown(got)}"
                _compare(record, gm, got, eager)
    for record, instance, gm in lacking:
        if "truth" in record:
            continue
        for inputs in _guessed_inputs(instance, gm):
            ok, eager = _run(instance, inputs)
            if ok:
                record["inputs"] = f"guessed: {_shown(inputs)}"
                _compare(record, gm, inputs, eager)
                break
    for record, _, _ in lacking:
        if "truth" not in record:
            record.update(truth="unverified", detail="no inputs eager accepts: "
                          + str(record.get("eager_error", "none inferred")))

    # FX010: the node, and whether it computed a tensor
    nodes_of = {}
    for item in seen:
        if item.traced is not None and item.traced.ctx.graph_module is not None:
            nodes_of[item.name] = {n.name: n for n in item.traced.ctx.graph_module.graph.nodes}
    fx010 = []
    for d in diagnostics:
        if d["code"] != "FX010":
            continue
        node = nodes_of.get(d.get("module"), {}).get((d.get("data") or {}).get("node"))
        entry = {"module": d.get("module"), "line": d["span"]["line"], "message": d["message"],
                 "node": (d.get("data") or {}).get("node")}
        if node is not None:
            entry["op"] = node.op
            entry["target"] = node_tables.target_text(node)
            meta = node.meta.get("tensor_meta")
            shape_run = any("tensor_meta" in n.meta for n in nodes_of[d["module"]].values())
            entry["tensor"] = (None if not shape_run else
                               meta is not None and hasattr(meta, "shape"))
            if entry["tensor"]:
                entry["shape"] = [int(s) for s in meta.shape]
        fx010.append(entry)
    result = {
        "classes": classes,
        "diagnostics": [d for d in diagnostics if d["severity"] == "error"
                        or d["code"] in ("FX010", "FX015")],
        "fx010": fx010,
        "fxls_s": fxls_s,
        "total_s": time.perf_counter() - started,
    }
    Path(out).write_text(json.dumps(result, default=str))


def _is_meta(module: Any) -> bool:
    return any(t.is_meta for t in (*module.parameters(), *module.buffers()))


def _real_instances(seen: list[_Seen], built: type) -> dict[int, Any]:
    """For models fxls traced on the meta device (too big to build): the same call built for
    real (seeded as fxls seeds it), and its submodules for the instances harvested inside."""
    import torch

    found: dict[int, Any] = {}
    for item in seen:
        outcome = item.outcome
        if not isinstance(outcome, built) or not outcome.on_meta or outcome.via is not None:
            continue
        if not outcome.entry or not _is_meta(outcome.instance):
            continue
        torch.manual_seed(0)
        try:
            model = eval(outcome.entry, {**item.file.namespace, "torch": torch})
        except Exception:
            continue
        if type(model) is not type(outcome.instance):
            continue
        found[id(outcome.instance)] = model
        for path, sub in outcome.instance.named_modules():
            if path and id(sub) not in found:
                try:
                    found[id(sub)] = model.get_submodule(path)
                except AttributeError:
                    pass
    return found


def _same_inputs(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    import torch

    return len(a) == len(b) and all(
        isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
        for x, y in zip(a, b, strict=True))


def _guessed_inputs(instance: Any, gm: Any) -> list[tuple[Any, ...]]:
    """Last resort for a one-input class: images and token sequences of the widths its
    attributes and first layers name (NCHW, NHWC, (B, N, C), (B, C))."""
    import torch

    required = [n for n in gm.graph.nodes if n.op == "placeholder"
                and not str(n.target).startswith("*") and not n.args]
    if len(required) != 1:
        return []
    widths: list[int] = []
    for name in ("dim", "in_chs", "in_channels", "in_features", "num_features", "inplanes",
                 "embed_dim", "channels", "in_dim", "input_dim"):
        value = getattr(instance, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
            widths.append(value)
    for module in instance.modules():
        if isinstance(module, torch.nn.Conv2d):
            widths.append(module.in_channels)
        elif isinstance(module, torch.nn.Linear):
            widths.append(module.in_features)
        elif isinstance(module, torch.nn.LayerNorm | torch.nn.BatchNorm2d | torch.nn.GroupNorm):
            size = getattr(module, "normalized_shape", None)
            widths.append(size[-1] if size else getattr(
                module, "num_features", getattr(module, "num_channels", 0)))
        if len(widths) >= 4:
            break
    shapes: list[tuple[int, ...]] = []
    for c in dict.fromkeys(w for w in widths if w):
        shapes += [(2, c, 32, 32), (2, 64, c), (2, 16, 16, c), (2, c), (2, 196, c),
                   (2, 7, 7, c), (2, c, 56, 56)]
    torch.manual_seed(1)
    return [(torch.randn(s),) for s in dict.fromkeys(shapes)][:16]


def _keep_inputs(captured: dict, key: int, _module: Any, args: tuple, kwargs: dict) -> None:
    """A forward pre-hook: the first positional inputs an instance gets."""
    import torch

    if key not in captured and args and not kwargs:
        captured[key] = tuple(
            a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args)


def _diag_dict(d: Any) -> dict:
    return {"code": d.code, "severity": d.severity, "message": d.message, "module": d.module,
            "span": d.span.to_dict(), "data": d.data}


def _compare(record: dict, gm: Any, inputs: tuple[Any, ...], eager: Any) -> None:
    from fxls.analysis.rules import outputs_close  # fxls's own tolerance: same verdict rule

    ok, traced = _run(gm, inputs)
    if not ok:
        record.update(truth="graph_error", detail=f"the torch.fx graph raised {traced} "
                      "where eager forward runs")
    elif outputs_close(eager, traced):
        record["truth"] = "match"
    else:
        record.update(truth="mismatch", detail="torch.fx graph output differs from eager")


# -- the parent: one child per file, verdicts, totals ----------------------------------------


def verdicts(result: dict) -> list[dict]:
    """Each class with fxls's error diagnostics and torch.fx's outcome, classified."""
    errors: dict[str, list[dict]] = collections.defaultdict(list)
    for d in result["diagnostics"]:
        if d["severity"] != "error" or d["code"] not in ERROR_CODES:
            continue
        owners = {d.get("module")} | set((d.get("data") or {}).get("also_reached_from", []))
        for owner in owners - {None, ""}:
            errors[owner].append(d)
    out = []
    for record in result["classes"]:
        record = dict(record)
        mine = errors.get(record["name"], [])
        record["fxls_errors"] = [
            {"code": d["code"], "line": d["span"]["line"], "message": d["message"],
             "direct": d.get("module") == record["name"]} for d in mine]
        info = [d["message"] for d in result["diagnostics"]
                if d["code"] == "FX015" and d.get("module") == record["name"]]
        if info:
            record["fxls_fx015"] = info[0]
        truth = record.get("truth", "no instance")
        if truth == "no instance":
            record["verdict"] = "no instance"
        elif truth == "unverified":
            record["verdict"] = "flagged, unverified" if mine else "unverified"
        elif mine:
            record["verdict"] = "confirmed" if truth in TRUE_ERRORS else "wrong"
        else:
            record["verdict"] = "missed" if truth in TRUE_ERRORS else "clean"
        out.append(record)
    return out


def run_file(python: str, env: dict, path: Path, timeout: float) -> dict:
    record: dict[str, Any] = {"path": str(path)}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [python, str(Path(__file__).resolve()), "--child", str(path), str(out)],
                env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            record.update(wall_s=time.perf_counter() - start,
                          error=f"did not finish in {timeout:g} s")
            return record
        record["wall_s"] = time.perf_counter() - start
        if not out.is_file():
            record["error"] = short(f"exit {proc.returncode}: {proc.stderr.strip()[-600:]}", 600)
            return record
        result = json.loads(out.read_text())
    record["classes"] = verdicts(result)
    record["fx010"] = result["fx010"]
    record["fxls_s"] = result["fxls_s"]
    record["file_errors"] = [
        f"{d['code']} line {d['span']['line']}: {short(d['message'], 300)}"
        for d in result["diagnostics"] if d["code"] == "FX100"]
    return record


def counts(record: dict) -> collections.Counter:
    c = collections.Counter(m["verdict"] for m in record.get("classes", []))
    c["classes"] = len(record.get("classes", []))
    c["fx010"] = len(record.get("fx010", []))
    c["fx010_tensor"] = sum(1 for w in record.get("fx010", []) if w.get("tensor"))
    c["fx010_not_tensor"] = sum(1 for w in record.get("fx010", []) if w.get("tensor") is False)
    return c


def _precision(c: collections.Counter) -> str:
    judged = c["confirmed"] + c["wrong"]
    return f"{c['confirmed'] / judged:.1%}" if judged else "-"


def _name(path: str, site: Path | None) -> str:
    try:
        return str(Path(path).relative_to(site)) if site else path
    except ValueError:
        return path


def _errors_text(m: dict) -> str:
    return "; ".join(f"{e['code']} line {e['line']}: {short(e['message'], 220)}"
                     + ("" if e["direct"] else " (also reached)") for e in m["fxls_errors"])


def _truth_text(m: dict) -> str:
    text = {"match": "torch.fx traces it, outputs match",
            "fx_error": "torch.fx cannot trace"}.get(m.get("truth"), m.get("truth", "?"))
    if m.get("detail"):
        text += f": {short(m['detail'], 220)}"
    if m.get("site"):
        text += f" at {m['site']}"
    if m.get("inputs") and m.get("truth") == "match":
        text += f" (inputs {m['inputs']})"
    return text


def print_record(record: dict, site: Path | None) -> None:
    name = _name(record["path"], site)
    if record.get("error"):
        print(f"{name}: ERROR {record['error']} ({record['wall_s']:.1f} s)", flush=True)
        return
    c = counts(record)
    flagged = c["confirmed"] + c["wrong"] + c["flagged, unverified"]
    print(
        f"{name}: {c['classes']} classes, {c['classes'] - c['no instance']} with an instance;"
        f" fxls errors on {flagged} (confirmed {c['confirmed']}, wrong {c['wrong']},"
        f" unverified {c['flagged, unverified']}); missed {c['missed']};"
        f" clean {c['clean']}, unverified {c['unverified']};"
        f" FX010 {c['fx010']} (tensor {c['fx010_tensor']}); {record['wall_s']:.1f} s",
        flush=True)
    for err in record.get("file_errors", []):
        print(f"    {err}")
    for m in record["classes"]:
        if m["verdict"] in ("wrong", "flagged, unverified"):
            print(f"    {m['verdict'].upper():<8} {m['name']}: fxls {_errors_text(m)}"
                  f" | {_truth_text(m)}")
        elif m["verdict"] == "missed":
            said = f" | fxls: FX015 {short(m['fxls_fx015'], 160)}" if m.get("fxls_fx015") else ""
            print(f"    MISSED   {m['name']}: {_truth_text(m)}{said}")
    for w in record.get("fx010", []):
        kind = {True: f"tensor {w.get('shape')}", False: "not a tensor",
                None: "not run"}[w.get("tensor")]
        print(f"    FX010    {w['module']} line {w['line']}: node {w.get('node')} "
              f"({w.get('op')} {w.get('target')}; {kind}): {short(w['message'], 120)}")


def summarise(records: list[dict], total_s: float, site: Path | None) -> dict:
    total: collections.Counter = collections.Counter()
    for record in records:
        total.update(counts(record))
    flagged = total["confirmed"] + total["wrong"] + total["flagged, unverified"]
    print(
        f"total: {len(records)} files, {total['classes']} classes,"
        f" {total['classes'] - total['no instance']} with an instance; fxls errors on"
        f" {flagged} classes: confirmed {total['confirmed']}, wrong {total['wrong']},"
        f" unverified {total['flagged, unverified']}; precision {_precision(total)};"
        f" missed {total['missed']}; clean {total['clean']}, unverified {total['unverified']};"
        f" FX010 {total['fx010']} (on tensors {total['fx010_tensor']}, not tensors"
        f" {total['fx010_not_tensor']}); {total_s:.0f} s wall")
    for lib in ("timm", "torchvision"):
        sub = [r for r in records if f"/{lib}/" in r["path"]]
        if sub and len(sub) != len(records):
            c: collections.Counter = collections.Counter()
            for r in sub:
                c.update(counts(r))
            print(f"  {lib}: {len(sub)} files; confirmed {c['confirmed']}, wrong {c['wrong']},"
                  f" precision {_precision(c)}; missed {c['missed']}; FX010 {c['fx010']}")
    failed = [r for r in records if r.get("error")]
    if failed:
        print(f"  {len(failed)} files gave no result: "
              + ", ".join(_name(r["path"], site) for r in failed))
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for r in records:
        for m in r.get("classes", []):
            where = f"{_name(r['path'], site)}:{m['name']}"
            if m["verdict"] == "wrong":
                first = m["fxls_errors"][0]
                key = f"wrong {first['code']}: {reason_key(first['message'])}"
                groups[key].append(where)
            elif m["verdict"] == "missed":
                key = f"missed ({m['truth']}): {reason_key(m.get('detail'))}"
                groups[key].append(where)
    if groups:
        print("wrong reports and missed errors, grouped:")
        for key, where in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(where):4d}  {key}")
            for w in where:
                print(f"          {w}")
    return {**dict(total), "files": len(records), "wall_s": total_s,
            "precision": (total["confirmed"] / (total["confirmed"] + total["wrong"])
                          if total["confirmed"] + total["wrong"] else None)}


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zoo", type=Path, default=DEFAULT_ZOO,
                        help=f"model zoo folder (default {DEFAULT_ZOO}; its site/ is used)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--sample", action="store_true",
                       help="15 timm files + 17 torchvision classification files (default)")
    group.add_argument("--all", action="store_true",
                       help="every public timm model file + the torchvision ones")
    group.add_argument("--files", nargs="+", help="these files (absolute or relative to site/)")
    parser.add_argument("--library", choices=LIBRARIES, default="all")
    parser.add_argument("--limit", type=int, help="only the first N files")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="per file: fxls's analysis + torch.fx, seconds (default 180)")
    parser.add_argument("--json", type=Path, dest="json_out", help="write all records here")
    parser.add_argument("--load", type=Path, help="print the results of a saved --json file")
    args = parser.parse_args(argv)

    if args.load:
        saved = json.loads(args.load.read_text())
        print(f"{args.load}: fxls {saved.get('commit')}, {saved.get('machine')}")
        site = Path(saved["site"]) if saved.get("site") else None
        for record in saved["files"]:
            print_record(record, site)
        print()
        summarise(saved["files"], saved["total"]["wall_s"], site)
        return 0

    found = zoo_files(args)
    if isinstance(found, int):
        return found
    site, files = found
    venv_python = REPO / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), str(site), env.get("PYTHONPATH", "")) if p)
    commit = _commit()
    print(f"precision of fxls's errors against torch.fx on {len(files)} files in {site}"
          f" (fxls {commit}; timeout {args.timeout:g} s per file)", flush=True)
    start = time.perf_counter()
    records: list[dict] = []

    def save(total: dict) -> None:
        if args.json_out:
            args.json_out.write_text(json.dumps({
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                           f"{platform.python_version()}",
                "commit": commit,
                "site": str(site),
                "timeout_s": args.timeout,
                "total": total,
                "files": records,
            }, indent=1, default=str))

    for path in files:
        record = run_file(python, env, path, args.timeout)
        print_record(record, site)
        records.append(record)
        save({"wall_s": time.perf_counter() - start, "partial": True})  # an interrupted run
    total_s = time.perf_counter() - start
    print()
    save(summarise(records, total_s, site))
    if args.json_out:
        print(f"wrote {args.json_out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main())
