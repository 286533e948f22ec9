"""torch.fx's own test suite run twice: against torch.fx, and with its torch.fx pointed at fxcore.

The suite's text is never part of this repository. It lives in a cache directory
(``~/.cache/fxls-torchfx-suite`` or ``$FXLS_TORCHFX_SUITE``), filled by hand from pytorch's
``test/test_fx.py`` of the release matching the installed torch, together with the helper
modules it imports from ``test/fx/`` (``named_tup.py``, ``test_future.py``) and a ``site/``
directory holding the suite's extra test dependencies::

    pip install --target ~/.cache/fxls-torchfx-suite/site expecttest pytest-timeout

numpy (``op_db``) and torchvision come from ``~/.cache/fxls-model-zoo/site`` when present.

Each run copies the suite into ``run-torchfx-<pid>/`` and ``run-fxcore-<pid>/`` of the cache.
Both copies drop the imports of the other suites bundled into test_fx.py (only TestFX and
TestOperatorSignatures run). The fxcore copy has every ``torch.fx`` name rewritten to
``fxcore``, except torch.fx parts outside fxcore's scope (``OUT_OF_SCOPE_MODULES``); a
module-level import fxcore cannot satisfy binds a stand-in that fails the tests using it,
so one missing name costs its tests, not the whole file.

Usage::

    .venv/bin/python benchmarks/torchfx_suite.py [--reuse-reference] [-k EXPR] [--timeout S]

Prints pass counts both ways, fxcore's pass rate over the tests torch.fx passes (the
out-of-scope tests set aside and listed), and every test torch.fx passes and fxcore does not,
with a one-line reason. ``--reuse-reference`` takes the torch.fx results of an earlier run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(
    os.environ.get("FXLS_TORCHFX_SUITE", Path.home() / ".cache" / "fxls-torchfx-suite")
)
MODEL_ZOO_SITE = Path.home() / ".cache" / "fxls-model-zoo" / "site"
SUITE_FILE = "test_fx.py"
HELPER_DIR = "fx"
TEST_CLASSES = ("TestFX", "TestOperatorSignaturesCPU")

# torch.fx modules the issue puts out of fxcore's scope: the rewrite leaves them on torch.fx.
OUT_OF_SCOPE_MODULES = (
    "torch.fx._compatibility",
    "torch.fx.experimental._config",
    "torch.fx.experimental.proxy_tensor",
)
# Tests exercising make_fx / proxy_tensor, export + FakeTensor ShapeEnv, or dynamo.
OUT_OF_SCOPE_TESTS = {
    "TestFX::test_delete_unused_values": "make_fx (proxy_tensor)",
    "TestFX::test_shape_prop_unbacked_sym": "torch.export + FakeTensor ShapeEnv",
    "TestFX::test_control_flow_tracing": "functorch control_flow.cond (dynamo)",
}

_FOREIGN_SUITE_IMPORT = re.compile(r"^from fx\.test_\w+ import (\([^)]*\)|.*)\n", re.MULTILINE)
_TORCH_FX = re.compile(
    r"\btorch\.fx\b(?!\.(?:"
    + "|".join(re.escape(m.removeprefix("torch.fx.")) for m in OUT_OF_SCOPE_MODULES)
    + r"))"
)
_TOP_LEVEL_FROM_IMPORT = re.compile(r"^from (fxcore[\w.]*) import ([\w, ]+)$")
_TOP_LEVEL_IMPORT_AS = re.compile(r"^import (fxcore[\w.]*) as (\w+)$")

_STAND_IN_PRELUDE = """\
import fxcore


class FxcoreLacks(Exception):
    pass


class _FxcoreMissingName:
    def __init__(self, name, error):
        self._name, self._error = name, error

    def _fail(self, *args, **kwargs):
        raise FxcoreLacks(f"fxcore lacks {self._name} ({self._error})")

    __call__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    def __mro_entries__(self, bases):
        self._fail()


"""


@dataclass(frozen=True)
class Outcome:
    status: str  # passed | failed | error | skipped
    reason: str


def suite_present() -> bool:
    return (CACHE_DIR / SUITE_FILE).is_file() and (
        CACHE_DIR / HELPER_DIR / "named_tup.py"
    ).is_file()


def without_foreign_suites(text: str) -> str:
    return _FOREIGN_SUITE_IMPORT.sub("", text)


def pointed_at_fxcore(text: str) -> str:
    """The suite's text with torch.fx replaced by fxcore, module-level imports guarded per name."""
    rewritten = _TORCH_FX.sub("fxcore", text)
    lines: list[str] = []
    for line in rewritten.splitlines():
        from_import = _TOP_LEVEL_FROM_IMPORT.match(line)
        import_as = _TOP_LEVEL_IMPORT_AS.match(line)
        if from_import:
            module, names = (
                from_import.group(1),
                [n.strip() for n in from_import.group(2).split(",")],
            )
            for name in names:
                lines += _guarded(f"from {module} import {name}", name, f"{module}.{name}")
        elif import_as:
            module, alias = import_as.groups()
            lines += _guarded(line, alias, module)
        else:
            lines.append(line)
    body = "\n".join(lines) + "\n"
    future_imports = list(re.finditer(r"^from __future__ import .*\n", body, re.MULTILINE))
    first_import = re.search(r"^(import|from) ", body, re.MULTILINE)
    cut = (
        future_imports[-1].end()
        if future_imports
        else (first_import.start() if first_import else 0)
    )
    return body[:cut] + _STAND_IN_PRELUDE + body[cut:]


def _guarded(statement: str, bound_name: str, qualified: str) -> list[str]:
    return [
        "try:",
        f"    {statement}",
        "except ImportError as _fxcore_missing:",
        f"    {bound_name} = _FxcoreMissingName({qualified!r}, _fxcore_missing)",
    ]


def prepare_copy(mode: str) -> Path:
    run_dir = CACHE_DIR / f"run-{mode}-{os.getpid()}"
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / HELPER_DIR).mkdir(parents=True)
    rewrite = pointed_at_fxcore if mode == "fxcore" else (lambda text: text)
    suite = without_foreign_suites((CACHE_DIR / SUITE_FILE).read_text())
    (run_dir / SUITE_FILE).write_text(rewrite(suite))
    for helper in (CACHE_DIR / HELPER_DIR).glob("*.py"):
        (run_dir / HELPER_DIR / helper.name).write_text(rewrite(helper.read_text()))
    return run_dir


def run_suite(
    mode: str, keyword: str | None, timeout_s: int, keep: bool = False
) -> dict[str, Outcome]:
    run_dir = prepare_copy(mode)
    report = run_dir / "junit.xml"
    search_path = [run_dir, CACHE_DIR / "site", MODEL_ZOO_SITE, REPO_ROOT]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in search_path if p.exists()))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--timeout={timeout_s}",
        f"--junitxml={report}",
        "-o",
        "junit_family=xunit1",
        *(f"{SUITE_FILE}::{cls}" for cls in TEST_CLASSES),
    ]
    if keyword:
        command += ["-k", keyword]
    print(f"[{mode}] running the suite in {run_dir} ...", flush=True)
    subprocess.run(
        command,
        cwd=run_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    if not report.exists():
        raise SystemExit(f"[{mode}] pytest wrote no report; run it by hand in {run_dir} to see why")
    outcomes = parse_junit(report)
    if not keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return outcomes


def parse_junit(report: Path) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name', '')}"
        status, reason = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = (
                    "skipped"
                    if child.tag == "skipped"
                    else ("error" if child.tag == "error" else "failed")
                )
                reason = one_line(child.get("message") or child.text or "")
                break
        outcomes[test_id] = Outcome(status, reason)
    return outcomes


def one_line(message: str) -> str:
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "(no message)"
    return first if len(first) <= 160 else first[:157] + "..."


def reference_cache() -> Path:
    return CACHE_DIR / f"reference-torch-{torch.__version__}.json"


def load_or_run_reference(reuse: bool, keyword: str | None, timeout_s: int) -> dict[str, Outcome]:
    cache = reference_cache()
    if reuse and cache.exists() and keyword is None:
        return {k: Outcome(**v) for k, v in json.loads(cache.read_text()).items()}
    outcomes = run_suite("torchfx", keyword, timeout_s)
    if keyword is None:
        cache.write_text(json.dumps({k: asdict(v) for k, v in outcomes.items()}, indent=1))
    return outcomes


def summarise(reference: dict[str, Outcome], fxcore: dict[str, Outcome]) -> None:
    for cls in TEST_CLASSES:
        ref = {k: v for k, v in reference.items() if k.startswith(cls + "::")}
        ours = {k: v for k, v in fxcore.items() if k.startswith(cls + "::")}
        print(
            f"{cls}: torch.fx passes {count(ref, 'passed')} of {len(ref)} "
            f"({count(ref, 'skipped')} skipped); "
            f"fxcore passes {count(ours, 'passed')} of {len(ours)}"
        )
    passed_by_torchfx = [k for k, v in reference.items() if v.status == "passed"]
    in_scope = [k for k in passed_by_torchfx if k not in OUT_OF_SCOPE_TESTS]
    fxcore_passes = [
        k for k in in_scope if fxcore.get(k, Outcome("missing", "")).status == "passed"
    ]
    print()
    for cls in (*TEST_CLASSES, None):
        scope = [k for k in in_scope if cls is None or k.startswith(cls + "::")]
        passes = [k for k in fxcore_passes if cls is None or k.startswith(cls + "::")]
        rate = 100.0 * len(passes) / len(scope) if scope else 0.0
        print(
            f"{cls or 'Both classes'}: fxcore passes {len(passes)} of the {len(scope)} "
            f"in-scope tests torch.fx passes: {rate:.1f}%"
        )
    print("\nOut of scope (set aside):")
    for test_id, why in sorted(OUT_OF_SCOPE_TESTS.items()):
        theirs = reference.get(test_id, Outcome("absent", "")).status
        ours = fxcore.get(test_id, Outcome("absent", ""))
        print(f"  {test_id}: {why} [torch.fx: {theirs}; fxcore: {ours.status}]")
        if ours.status not in ("passed", "skipped", "absent"):
            print(f"      fxcore: {ours.reason}")
    failing = sorted(k for k in in_scope if k not in fxcore_passes)
    print(f"\nFailing on fxcore ({len(failing)}):")
    for test_id in failing:
        outcome = fxcore.get(test_id, Outcome("missing", "not collected"))
        print(f"  {test_id}: [{outcome.status}] {outcome.reason}")
    differing = sorted(
        k
        for k, v in reference.items()
        if v.status != "passed" and fxcore.get(k, v).status not in (v.status, "passed")
    )
    if differing:
        print(
            f"\nNot passed by torch.fx either, but ending differently on fxcore ({len(differing)}):"
        )
        for test_id in differing:
            ours = fxcore[test_id]
            print(
                f"  {test_id}: [torch.fx: {reference[test_id].status}; fxcore: {ours.status}] "
                f"{ours.reason}"
            )
    only_fxcore = sorted(
        k
        for k, v in fxcore.items()
        if v.status == "passed" and reference.get(k, v).status != "passed"
    )
    if only_fxcore:
        print(f"\nPassing on fxcore only ({len(only_fxcore)}): " + ", ".join(only_fxcore))


def count(outcomes: dict[str, Outcome], status: str) -> int:
    return sum(1 for o in outcomes.values() if o.status == status)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--reuse-reference", action="store_true", help="reuse the cached torch.fx results"
    )
    parser.add_argument("-k", dest="keyword", help="pytest -k expression (both runs)")
    parser.add_argument("--timeout", type=int, default=300, help="per-test timeout in seconds")
    parser.add_argument(
        "--keep-copies", action="store_true", help="keep the run-<mode>-<pid> copies"
    )
    args = parser.parse_args()
    if not suite_present():
        print(
            f"torch.fx's test suite is not in {CACHE_DIR}: see this script's docstring.",
            file=sys.stderr,
        )
        return 2
    reference = load_or_run_reference(args.reuse_reference, args.keyword, args.timeout)
    fxcore = run_suite("fxcore", args.keyword, args.timeout, keep=args.keep_copies)
    summarise(reference, fxcore)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
