"""How much of real model code `fxls check` traces, in place: timm, torchvision, transformers.

    .venv/bin/python scripts/install_model_zoo.py          # once: ~280 MB in ~/.cache
    .venv/bin/python benchmarks/coverage_real_models.py [--sample | --all] [--files F ...]
        [--library all|timm|torchvision|torchvision-models|transformers]
        [--limit N] [--timeout S] [--json OUT] [--brief] [--zoo DIR]

Runs `.venv/bin/fxls check --format json` on one model file at a time, inside the installed
zoo (the files' real paths, so relative imports and registries behave as in the library), with
the zoo's `site` folder on PYTHONPATH. For each file it prints the classes found (nn.Module
subclasses the file defines, known by importing it in a separate process, together with the
classes fxls reports), how many were traced (status traced or partial, with the root they were
traced inside: `via`, and the factory or pragma that built them: `entry`), not constructed
(skipped, with the reason), failed (with the error), the file's coverage (traced+partial)/found
and its wall time; then totals (with how many classes were built: fxls had an instance), per
package (timm, torchvision and its detection/segmentation/... sub-packages, transformers,
vit_pytorch) and the most common reasons. Packages installed next to the zoo (`pip install
--target DIR`, DIR on `PYTHONPATH`) are measured in place too: `--files DIR/pkg/file.py`.

Files: `--sample` (default) is 15 timm files plus torchvision's 17 classification model files;
`--all` takes every public timm model file (`timm/models/*.py` without `_*.py` and
`__init__.py`) plus the torchvision ones; `--files` takes paths (absolute, or relative to the
zoo's site folder, e.g. `timm/models/resnet.py`). `--limit N` keeps the first N files.
Works without the zoo: it then says how to install it and exits 0.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()

TIMM_SAMPLE = [
    "resnet", "vision_transformer", "convnext", "efficientnet", "swin_transformer",
    "mobilenetv3", "byobnet", "nasnet", "levit", "beit", "deit", "mlp_mixer", "regnet",
    "densenet", "vgg",
]
TORCHVISION_CLASSIFICATION = [
    "alexnet", "convnext", "densenet", "efficientnet", "googlenet", "inception", "maxvit",
    "mnasnet", "mobilenetv2", "mobilenetv3", "regnet", "resnet", "shufflenetv2", "squeezenet",
    "swin_transformer", "vgg", "vision_transformer",
]
#: Hugging Face modeling files (models/NAME/modeling_NAME.py), as users check them
TRANSFORMERS_SAMPLE = ("bert", "gpt2", "vit", "t5", "llama", "distilbert", "resnet")
LIBRARIES = ("all", "timm", "torchvision", "torchvision-models", "transformers")
TRACED = ("traced", "partial")
#: the codes of a site where torch.fx stops (control flow, iteration, conversion, exception)
SITE_CODES = ("FX001", "FX002", "FX003", "FX004")

# Run in a separate process with the zoo on sys.path: which nn.Module classes each file defines.
LIST_CLASSES = r"""
import importlib, inspect, json, sys, warnings
warnings.simplefilter("ignore")
import torch
out = {}
for name in sys.argv[1:]:
    try:
        mod = importlib.import_module(name)
    except BaseException as exc:  # noqa: BLE001
        out[name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        continue
    out[name] = {"classes": [
        k for k, v in vars(mod).items()
        if inspect.isclass(v) and issubclass(v, torch.nn.Module) and v.__module__ == name
    ]}
print(json.dumps(out))
"""


def install_hint(zoo: Path) -> str:
    dest = "" if zoo == DEFAULT_ZOO else f" --dest {zoo}"
    return (
        f"model zoo not found in {zoo}/site; install it (timm + torchvision, ~150 MB, "
        f"nothing goes into .venv) with:\n"
        f"    .venv/bin/python scripts/install_model_zoo.py{dest}"
    )


def zoo_files(args: argparse.Namespace) -> tuple[Path, list[Path]] | int:
    """The zoo's site folder and the files ``args`` select; or the exit code when the zoo is
    absent (0, after saying how to install it) or a named file does not exist (2)."""
    site = args.zoo.expanduser() / "site"
    if not (site / "timm").is_dir() or not (site / "torchvision").is_dir():
        print(install_hint(args.zoo.expanduser()))
        return 0
    files = select_files(site, args)
    absent = [f for f in files if not f.is_file()]
    if absent:
        print("no such files: " + ", ".join(map(str, absent)), file=sys.stderr)
        return 2
    return site, files


def select_files(site: Path, args: argparse.Namespace) -> list[Path]:
    if args.files:
        files = []
        for name in args.files:
            path = Path(name).expanduser()
            files.append(path if path.is_absolute() else site / path)
    else:
        timm_dir = site / "timm" / "models"
        if args.all:
            timm = sorted(
                p for p in timm_dir.glob("*.py")
                if not p.name.startswith("_")
            )
        else:
            timm = [timm_dir / f"{name}.py" for name in TIMM_SAMPLE]
        tv_dir = site / "torchvision" / "models"
        torchvision = [tv_dir / f"{name}.py" for name in TORCHVISION_CLASSIFICATION]
        libraries = {
            "timm": timm, "torchvision": torchvision, "all": timm + torchvision,
            # torchvision's whole models/ tree: detection, segmentation, video, optical flow...
            "torchvision-models": sorted(p for p in tv_dir.rglob("*.py")
                                         if not p.name.startswith("_")),
            "transformers": [site / "transformers" / "models" / name / f"modeling_{name}.py"
                             for name in TRANSFORMERS_SAMPLE],
        }
        files = libraries[args.library]
    if args.limit is not None:
        files = files[: args.limit]
    return files


def dotted_name(site: Path, path: Path) -> str | None:
    """``path``'s module name below ``site`` or below a folder of ``$PYTHONPATH`` (packages
    installed next to the zoo, e.g. with `pip install --target DIR`)."""
    extra = [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for folder in (site, *extra):
        try:
            rel = path.resolve().relative_to(folder.resolve())
        except ValueError:
            continue
        return ".".join(rel.with_suffix("").parts)
    return None


def list_classes(python: str, env: dict, site: Path, files: list[Path]) -> dict[Path, dict]:
    """Import each file as its module in one child process; {path: {classes|error}}."""
    names = {dotted_name(site, f): f for f in files}
    names.pop(None, None)
    if not names:
        return {}
    try:
        result = subprocess.run(
            [python, "-c", LIST_CLASSES, *names], env=env, capture_output=True, text=True,
            timeout=600,
        )
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return {}
    return {names[name]: value for name, value in data.items()}


def short(text: str | None, width: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 3] + "..."


def module_reason(module: dict, diagnostics: list[dict]) -> str | None:
    """The reason a class was not traced: the report's `reason`, else its first diagnostic."""
    if module.get("reason"):
        return module["reason"]
    order = {"error": 0, "warning": 1, "information": 2, "hint": 3}
    mine = [d for d in diagnostics if d.get("module") == module.get("name")]
    mine.sort(key=lambda d: order.get(d.get("severity"), 9))
    if mine:
        return f"{mine[0].get('code')}: {mine[0].get('message')}"
    return None


#: the reasons of a report's module that do not mean fxls failed to build the class
BUILT_ANYWAY = ("it has no forward of its own", "a leaf module", "`# fxls:")


def is_not_built(status: str | None, reason: str | None) -> bool:
    """fxls had no instance of the class: not constructed (FX101), or its constructor
    raised (a failed class with a reason); a base class without forward, a declared leaf
    or a skip pragma needs none."""
    if not reason or reason.startswith(BUILT_ANYWAY):
        return False
    return status in ("skipped", "failed")


def run_file(fxls: list[str], env: dict, path: Path, timeout: float) -> dict:
    cmd = [*fxls, "check", "--no-cache", "--format", "json", "--no-progress", "--timeout",
           str(timeout), str(path)]
    start = time.perf_counter()
    record: dict = {"path": str(path), "modules": [], "file_errors": []}
    try:
        result = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                timeout=timeout * 2 + 60)
    except subprocess.TimeoutExpired:
        record["wall_s"] = time.perf_counter() - start
        record["error"] = f"fxls check did not finish in {timeout * 2 + 60:.0f} s"
        return record
    record["wall_s"] = time.perf_counter() - start
    record["exit_code"] = result.returncode
    try:
        report = json.loads(result.stdout)
        file_report = report["files"][0]
    except (ValueError, KeyError, IndexError):
        record["error"] = short(
            f"exit {result.returncode}, no JSON report: {result.stderr.strip()[-600:]}", 600
        )
        return record
    diagnostics = file_report.get("diagnostics", [])
    for module in file_report.get("modules", []):
        entry = {
            "name": module.get("name"),
            "status": module.get("status"),
            "nodes": module.get("nodes"),
            "via": module.get("via"),
            "entry": module.get("entry"),
            "built": not is_not_built(module.get("status"), module.get("reason")),
        }
        if entry["status"] not in TRACED:
            entry["reason"] = module_reason(module, diagnostics)
        record["modules"].append(entry)
    for diag in diagnostics:
        if diag.get("code") in ("FX100", "FX102") and not diag.get("module"):
            line = diag.get("range", {}).get("start", {}).get("line", 0) + 1
            record["file_errors"].append(
                f"{diag['code']} line {line}: {short(diag.get('message'), 300)}"
            )
    counts = collections.Counter(d.get("code") for d in diagnostics)
    record["diagnostic_counts"] = dict(sorted(counts.items()))
    # where torch.fx would stop: the distinct lines of FX001-FX004, and the roots traced
    record["sites"] = len({
        (d.get("path", str(path)), d.get("range", {}).get("start", {}).get("line"))
        for d in diagnostics if d.get("code") in SITE_CODES
    })
    record["roots"] = sum(1 for m in record["modules"]
                          if m["status"] in TRACED and not m.get("via"))
    return record


def summarise(record: dict, expected: dict | None) -> dict:
    reported = {m["name"] for m in record["modules"]}
    expected_names = list((expected or {}).get("classes", []))
    missing = [n for n in expected_names if n not in reported]
    record["not_reported"] = missing
    if expected and "error" in expected:
        record["import_error"] = expected["error"]
    statuses = collections.Counter(m["status"] for m in record["modules"])
    found = len(reported) + len(missing)
    traced = statuses["traced"] + statuses["partial"]
    record["counts"] = {
        "found": found,
        "built": sum(1 for m in record["modules"] if m.get("built", True)),
        "traced": statuses["traced"],
        "partial": statuses["partial"],
        "skipped": statuses["skipped"],
        "failed": statuses["failed"],
        "not_reported": len(missing),
    }
    record["coverage"] = traced / found if found else None
    return record


def print_record(record: dict, site: Path, brief: bool) -> None:
    c = record["counts"]
    try:
        name = str(Path(record["path"]).relative_to(site))
    except ValueError:
        name = record["path"]
    cov = "-" if record["coverage"] is None else f"{record['coverage']:.0%}"
    print(
        f"{name}: found {c['found']}, traced {c['traced'] + c['partial']}"
        f" (partial {c['partial']}), not constructed {c['skipped']}, failed {c['failed']}"
        + (f", not reported {c['not_reported']}" if c["not_reported"] else "")
        + f"; coverage {cov}; {record['wall_s']:.1f} s",
        flush=True,
    )
    if record.get("error"):
        print(f"    ERROR {record['error']}")
    for err in record["file_errors"]:
        print(f"    {err}")
    if brief:
        return
    for m in record["modules"]:
        how = []
        if m.get("nodes"):
            how.append(f"{m['nodes']} nodes")
        if m.get("via"):
            how.append(f"via {m['via']}")
        if m.get("entry"):
            how.append(f"entry {m['entry']}")
        detail = ", ".join(how)
        if m["status"] not in TRACED and m.get("reason"):
            detail = (detail + "; " if detail else "") + short(m["reason"])
        print(f"    {m['status']:<8} {m['name']}" + (f"  ({detail})" if detail else ""))
    for n in record["not_reported"]:
        print(f"    missing  {n}  (defined in the file, absent from fxls's report)")


def reason_key(reason: str | None) -> str:
    """Group similar reasons: names and numbers blanked, the advice after `; ` dropped."""
    text = short(reason or "no reason given", 400)
    text = re.sub(r"`[^`]*`", "`_`", text)
    text = re.sub(r"'[^']*'", "'_'", text)
    text = re.sub(r"\b[\w.]+\.__init__\(\)", "__init__()", text)
    text = re.sub(r"'_'(?:(?:, and |, | and )'_')+", "'_'...", text)
    text = re.sub(r"`_`(?:(?:, and |, | and )`_`)+", "`_`...", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return short(text.split("; ")[0], 140)


PACKAGES = ("timm", "torchvision", "transformers", "vit_pytorch")


def package_of(path: str) -> str:
    """The library a model file belongs to (torchvision's sub-packages apart: detection...)."""
    parts = Path(path).parts
    for name in PACKAGES:
        if name in parts:
            rest = parts[parts.index(name) + 1:]
            if name == "torchvision" and len(rest) > 2 and rest[0] == "models":
                return f"torchvision.{rest[1]}"
            return name
    return "other"


def print_table(records: list[dict]) -> None:
    """Per package, a markdown table: classes, built, traced, roots, sites per root, and the
    files that are FX100 though Python imports them (a bug)."""
    print("| package | files | classes | built | traced | roots | sites | sites per root "
          "| FX100 on a file Python imports |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    groups = sorted({package_of(r["path"]) for r in records})
    for lib in [*groups, None]:
        sub = [r for r in records if lib is None or package_of(r["path"]) == lib]
        if lib is None and len(groups) == 1:
            break
        found = sum(r["counts"]["found"] for r in sub)
        built = sum(r["counts"].get("built", 0) for r in sub)
        traced = sum(r["counts"]["traced"] + r["counts"]["partial"] for r in sub)
        roots = sum(r.get("roots", 0) for r in sub)
        sites = sum(r.get("sites", 0) for r in sub)
        fx100 = sum(1 for r in sub if any(e.startswith("FX100") for e in r["file_errors"])
                    and not r.get("import_error"))
        per_root = f"{sites / roots:.1f}" if roots else "-"
        name = "**all**" if lib is None else lib
        print(f"| {name} | {len(sub)} | {found} | {built} ({built / found if found else 0:.1%}) "
              f"| {traced} ({traced / found if found else 0:.1%}) | {roots} | {sites} "
              f"| {per_root} | {fx100} |")


def print_summary(records: list[dict], total_s: float) -> dict:
    totals: collections.Counter = collections.Counter()
    for record in records:
        totals.update(record["counts"])
    traced = totals["traced"] + totals["partial"]
    found = totals["found"]
    print(
        f"total: {len(records)} files, {found} classes found, {traced} traced"
        f" (partial {totals['partial']}), {totals['skipped']} not constructed,"
        f" {totals['failed']} failed, {totals['not_reported']} not reported;"
        f" built {totals['built']}/{found} = {totals['built'] / found if found else 0:.1%};"
        f" coverage {traced}/{found} = {traced / found if found else 0:.1%};"
        f" {total_s:.0f} s wall"
    )
    for lib in sorted({package_of(r["path"]) for r in records}):
        sub = [r for r in records if package_of(r["path"]) == lib]
        if sub and len(sub) != len(records):
            f_ = sum(r["counts"]["found"] for r in sub)
            b_ = sum(r["counts"].get("built", 0) for r in sub)
            t_ = sum(r["counts"]["traced"] + r["counts"]["partial"] for r in sub)
            print(f"  {lib}: {len(sub)} files, {f_} classes, {b_} built"
                  f" ({b_ / f_ if f_ else 0:.1%}), {t_} traced ({t_ / f_ if f_ else 0:.1%})")
    print_table(records)
    full = sum(1 for r in records if r["counts"]["found"] and r["coverage"] == 1)
    print(f"  files fully traced: {full}/{sum(1 for r in records if r['counts']['found'])}")
    errored = [r for r in records if r.get("error")]
    if errored:
        print(f"  {len(errored)} files gave no report (timeout or crash)")
    file_errors = collections.Counter(
        reason_key(e.split(": ", 1)[-1]) for r in records for e in r["file_errors"]
    )
    if file_errors:
        print("file-level errors:")
        for key, n in file_errors.most_common(10):
            print(f"  {n:4d}  {key}")
    reasons = collections.Counter(
        reason_key(m.get("reason"))
        for r in records for m in r["modules"] if m["status"] not in TRACED
    )
    if reasons:
        print("why classes were not traced (most common):")
        for key, n in reasons.most_common(12):
            print(f"  {n:4d}  {key}")
    return {**dict(totals), "files": len(records), "wall_s": total_s,
            "coverage": traced / found if found else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--zoo", type=Path, default=DEFAULT_ZOO,
                        help=f"model zoo folder (default {DEFAULT_ZOO}; its site/ is used)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--sample", action="store_true",
                       help="15 timm files + torchvision classification files (default)")
    group.add_argument("--all", action="store_true", help="every public timm model file")
    group.add_argument("--files", nargs="+", help="these files (absolute or relative to site/)")
    parser.add_argument("--library", choices=LIBRARIES, default="all",
                        help="with --sample/--all: timm and torchvision's classification files "
                             "(all), one of them, torchvision's whole models/ tree, or Hugging "
                             "Face modeling files (bert, gpt2, vit, t5, llama, distilbert, resnet)")
    parser.add_argument("--limit", type=int, help="only the first N files")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="fxls check --timeout per file, seconds (default 60)")
    parser.add_argument("--json", type=Path, dest="json_out", help="write all records here")
    parser.add_argument("--brief", action="store_true", help="one line per file")
    parser.add_argument("--fxls-root", type=Path,
                        help="run fxls/fxcore from this folder (e.g. `git archive` of a commit)")
    parser.add_argument("--no-class-list", action="store_true",
                        help="do not import the files separately to learn their classes")
    parser.add_argument("--load", type=Path, help="print the summary of a saved --json file")
    args = parser.parse_args(argv)

    if args.load:
        saved = json.loads(args.load.read_text())
        print(f"{args.load}: fxls from {saved.get('fxls_from')}, {saved.get('machine')}")
        print_summary(saved["files"], saved["total"]["wall_s"])
        return 0

    found = zoo_files(args)
    if isinstance(found, int):
        return found
    site, files = found

    venv_bin = REPO / ".venv" / "bin"
    python = str(venv_bin / "python") if (venv_bin / "python").exists() else sys.executable
    fxls = [str(venv_bin / "fxls")] if (venv_bin / "fxls").exists() else [python, "-m", "fxls"]
    env = dict(os.environ)
    roots = [str(args.fxls_root.resolve())] if args.fxls_root else []
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (*roots, str(site), env.get("PYTHONPATH", "")) if p
    )
    fxls_from = args.fxls_root or REPO

    print(f"fxls check on {len(files)} files in {site} (timeout {args.timeout:g} s per file;"
          f" fxls from {fxls_from})", flush=True)
    start = time.perf_counter()
    expected = {} if args.no_class_list else list_classes(python, env, site, files)
    records = []
    for path in files:
        record = summarise(run_file(fxls, env, path, args.timeout), expected.get(path))
        print_record(record, site, args.brief)
        records.append(record)
    total_s = time.perf_counter() - start

    print()
    total = print_summary(records, total_s)

    if args.json_out:
        args.json_out.write_text(json.dumps({
            "machine": f"{platform.machine()}, Python {platform.python_version()}",
            "timeout_s": args.timeout,
            "fxls_from": str(fxls_from),
            "total": total,
            "files": records,
        }, indent=1))
        print(f"wrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
