"""Every site torch.fx stops at, one by one, is reported by fxls in one run: torchvision's RAFT,
Faster R-CNN and Mask R-CNN in place.

The reference is `benchmarks/torchfx_one_by_one.py` (torch.fx's own Tracer; each stop fixed with
the eager run's value, the model built as fxls builds it) on the zoo's torchvision as installed
(`--ops none`: its C++ ops are absent here, as fxls sees it). fxls is `fxls check --format json`
on the model's file. A reference site is reported when an fxls diagnostic of that model is at that
file and line. Skipped unless the model zoo is installed (CI installs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.torch_answers import torch_answer

REPO = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()
SITE = ZOO / "site"
MODELS = SITE / "torchvision" / "models"

needs_zoo = pytest.mark.skipif(
    not (MODELS / "optical_flow" / "raft.py").is_file(),
    reason=f"model zoo not installed in {ZOO} (scripts/install_model_zoo.py)",
)

#: reference model -> (the file fxls checks, the class its diagnostics are attributed to)
CASES = {
    "raft_small": ("optical_flow/raft.py", "RAFT"),
    "fasterrcnn_mobilenet_v3_large_fpn": ("detection/faster_rcnn.py", "FasterRCNN"),
    "maskrcnn_resnet50_fpn": ("detection/mask_rcnn.py", "MaskRCNN"),
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    return env


def _python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, int]]]:
    folder = tmp_path_factory.mktemp("one_by_one")
    script = REPO / "benchmarks" / "torchfx_one_by_one.py"
    command = [_python(), str(script), "--ops", "none", "--mode", "eval", "--json",
               str(folder / "reference.json")]
    for model in CASES:
        command += ["--model", model]
    answer = torch_answer(command, [script], cwd=folder, env=_env(),
                          written_to=folder / "reference.json")
    return {result["model"]: [(stop["file"], stop["line"]) for stop in result["stops"]]
            for result in json.loads(answer)}


@pytest.fixture(scope="module")
def fxls_sites() -> dict[str, set[tuple[str, int]]]:
    fxls = REPO / ".venv" / "bin" / "fxls"
    command = [str(fxls)] if fxls.exists() else [sys.executable, "-m", "fxls"]
    paths = sorted({str(MODELS / file) for file, _ in CASES.values()})
    done = subprocess.run([*command, "check", "--format", "json", "--no-progress", "--timeout",
                           "300", *paths], env=_env(), capture_output=True, text=True,
                          timeout=1200)
    assert done.stdout, done.stderr[-3000:]
    sites: dict[str, set[tuple[str, int]]] = {}
    for file in json.loads(done.stdout)["files"]:
        for diagnostic in file["diagnostics"]:
            owners = {diagnostic.get("module"), *diagnostic.get("also_reached_from", ())}
            where = (diagnostic.get("path", file["path"]),
                     diagnostic["range"]["start"]["line"] + 1)
            for owner in owners:
                sites.setdefault(owner, set()).add(where)
    return sites


def _short(site: tuple[str, int]) -> str:
    return f"{'/'.join(Path(site[0]).parts[-2:])}:{site[1]}"


@needs_zoo
@pytest.mark.parametrize("model", list(CASES))
def test_every_site_torch_fx_stops_at_is_reported_in_one_run(model, reference, fxls_sites):
    _, owner = CASES[model]
    expected = reference[model]
    assert len(expected) >= 2, expected  # the reference itself found the stops
    reported = fxls_sites.get(owner, set())
    missing = [_short(site) for site in expected if site not in reported]
    assert not missing, (f"{model}: torch.fx stops at {len(expected)} sites one by one; "
                         f"fxls misses {missing}")
