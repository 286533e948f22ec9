"""fxls in place on torchvision's segmentation and detection models (the model zoo): a class
its file's factory builds is traced on the factory's model, not on guessed arguments, and no
class is reported for an error its guessed arguments caused. The three files are checked by
one ``fxls check``; torch.fx's own trace of the factory's model is kept with torch's answers.

Optional: skipped unless the zoo is installed (`.venv/bin/python scripts/install_model_zoo.py`,
folder `~/.cache/fxls-model-zoo` or `$FXLS_MODEL_ZOO`).
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

pytestmark = pytest.mark.skipif(
    not (MODELS / "segmentation" / "fcn.py").is_file(),
    reason=f"model zoo not installed in {ZOO} (scripts/install_model_zoo.py)",
)


def _zoo_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    return env


FILES = {name: MODELS / name for name in ("segmentation/fcn.py", "detection/ssd.py",
                                          "detection/generalized_rcnn.py")}


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """Each of ``FILES``' report, all checked by one ``fxls check``."""
    result = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--target", "symbolic_trace", "--timeout", "240", *map(str, FILES.values())],
        env=_zoo_env(), capture_output=True, text=True, timeout=900, cwd=REPO,
    )
    assert result.stdout, result.stderr[-3000:]
    by_path = {report["path"]: report for report in json.loads(result.stdout)["files"]}
    return {name: by_path[str(path)] for name, path in FILES.items()}


def _torch_fx_nodes(factory: str) -> int:
    """The node count of torch.fx's own trace of the model the package's factory builds."""
    code = ("import torch, torchvision\n"
            f"model = {factory}(weights=None, weights_backbone=None).eval()\n"
            "print(len(torch.fx.symbolic_trace(model).graph.nodes))")
    answer = torch_answer([sys.executable, "-c", code], [], cwd=REPO, env=_zoo_env(),
                          timeout=300)
    return int(answer.split()[-1])


def _line(path: Path, text: str) -> int:
    """The 0-based line of ``text`` in ``path`` (JSON ranges are LSP positions)."""
    return next(n for n, line in enumerate(path.read_text().splitlines()) if text in line)


def test_fcn_is_traced_on_its_factory_s_model_as_torch_fx_traces_it(reports: dict[str, dict]):
    report = reports["segmentation/fcn.py"]
    (fcn,) = [m for m in report["modules"] if m["name"] == "FCN"]
    assert (fcn["status"], fcn["entry"]) == ("traced",
                                              "fcn_resnet50(weights=None, weights_backbone=None)")
    assert fcn["nodes"] == _torch_fx_nodes("torchvision.models.segmentation.fcn_resnet50")
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]


def test_ssd_s_scoring_head_meets_the_iteration_torch_fx_stops_at_not_the_guess_s_len(
        reports: dict[str, dict]):
    path = MODELS / "detection" / "ssd.py"
    report = reports["detection/ssd.py"]
    modules = {m["name"]: m for m in report["modules"]}
    # its `module_list: nn.ModuleList` was 32, whose len() was an FX004 at line 82
    assert modules["SSDScoringHead"]["status"] == "partial"
    assert "module_list=nn.ModuleList(" in modules["SSDScoringHead"]["entry"]
    assert not [d for d in report["diagnostics"] if d["code"] == "FX004"]
    # torch.fx stops at `enumerate(x)` in SSDHead's heads (reported once, on the first class)
    line = _line(path, "for i, features in enumerate(x):")
    assert [d["code"] for d in report["diagnostics"] if d["range"]["start"]["line"] == line
            and "path" not in d] == ["FX002"]
    for name in ("SSD", "SSDHead", "SSDClassificationHead"):
        assert modules[name]["entry"] == "ssd300_vgg16(weights=None, weights_backbone=None)"


def test_generalized_rcnn_s_stand_ins_have_what_its_forward_uses(reports: dict[str, dict]):
    report = reports["detection/generalized_rcnn.py"]
    (model,) = report["modules"]
    assert "postprocess=..., returns 2 values" in model["entry"]
    # what is left is what torch.fx meets on Faster R-CNN: iterating the images first
    assert not [d for d in report["diagnostics"] if d["code"] == "FX004"]
    first = min((d for d in report["diagnostics"] if d["severity"] == "error"),
                key=lambda d: d["range"]["start"]["line"])
    path = MODELS / "detection" / "generalized_rcnn.py"
    assert (first["code"], first["range"]["start"]["line"]) == (
        "FX002", _line(path, "for img in images:"))
