"""``fxls check`` a second time with nothing changed: the result cache against the first run.

    .venv/bin/python benchmarks/bench_result_cache.py [--libraries timm,torchvision]

For each library of the model zoo (``~/.cache/fxls-model-zoo/site`` on PYTHONPATH), its
``models/`` folder is checked twice in place with a new, empty cache folder
(``FXLS_CACHE_DIR``): the first run analyses every file and fills the cache, the second
finds every file there but those whose job failed (FX102: a timeout under load is not
kept; ``--timeout`` makes one less likely on a busy machine). Each run is a fresh CLI
process; wall: its lifetime; CPU: user + system time of it and of the processes it waited
for (the worker and its jobs). The two runs' outputs (JSON) must be the same bytes but for
the files analysed again. The first runs take minutes: run it once, ``nice``'d.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"
FXLS = [sys.executable, "-m", "fxls.cli"]


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float
    output: bytes
    stderr: str


def check(folder: Path, cache: Path, options: list[str]) -> Run:
    env = {**os.environ, "FXLS_CACHE_DIR": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ZOO_SITE), str(REPO)])}
    env.pop("FXLS_NO_CACHE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*FXLS, "check", str(folder), "--format", "json", "--no-progress",
                           *options],
                          capture_output=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, done.stdout, done.stderr.decode(errors="replace"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libraries", default="timm,torchvision")
    parser.add_argument("--timeout", type=float, help="fxls check --timeout (default 30 s)")
    args = parser.parse_args()
    options = ["--timeout", str(args.timeout)] if args.timeout else []
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.processor() or '?'}, "
          f"load {os.getloadavg()[0]:.1f}; python {platform.python_version()}")
    failed = False
    for library in args.libraries.split(","):
        folder = ZOO_SITE / library / "models"
        if not folder.is_dir():
            print(f"{library}: not in the model zoo ({folder}), skipped")
            continue
        files = len(list(folder.rglob("*.py")))
        cache = Path(tempfile.mkdtemp(prefix="fxls-bench-cache-"))
        try:
            first, second = check(folder, cache, options), check(folder, cache, options)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        failures = _failed_jobs(first.output)
        same = _without(first.output, failures) == _without(second.output, failures)
        failed |= not same
        said = next((line for line in second.stderr.splitlines() if "from the cache" in line),
                    "no file from the cache")
        print(f"{library}/models ({files} files): first {first.wall_s:.1f} s wall, "
              f"{first.cpu_s:.1f} s CPU; second {second.wall_s:.2f} s wall, "
              f"{second.cpu_s:.2f} s CPU ({100 * second.wall_s / first.wall_s:.1f}% of the "
              f"first's wall time); outputs {'identical' if same else 'DIFFER'}"
              f"{f' but for the {len(failures)} failed jobs' if failures else ''}; {said}")
        for path in failures:
            print(f"  analysed again (FX102 in the first run): {path}")
    return 1 if failed else 0


def _failed_jobs(output: bytes) -> list[str]:
    """The files whose job failed (FX102), which the cache does not keep."""
    return [entry["path"] for entry in json.loads(output)["files"]
            if any(d["code"] == "FX102" for d in entry["diagnostics"])]


def _without(output: bytes, paths: list[str]) -> list[object]:
    return [entry for entry in json.loads(output)["files"] if entry["path"] not in paths]


if __name__ == "__main__":
    sys.exit(main())
