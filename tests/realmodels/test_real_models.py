"""fxls on real model libraries, in place: torchvision's resnet.py from the model zoo.

Optional: skipped unless the zoo is installed (`.venv/bin/python scripts/install_model_zoo.py`,
folder `~/.cache/fxls-model-zoo` or `$FXLS_MODEL_ZOO`). CI does not install it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()
SITE = ZOO / "site"
RESNET = SITE / "torchvision" / "models" / "resnet.py"

needs_zoo = pytest.mark.skipif(
    not RESNET.is_file(),
    reason=f"model zoo not installed in {ZOO} (scripts/install_model_zoo.py)",
)


def _fxls_check_json(path: Path, timeout: float = 180) -> dict:
    fxls = REPO / ".venv" / "bin" / "fxls"
    cmd = [str(fxls)] if fxls.exists() else [sys.executable, "-m", "fxls"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [*cmd, "check", "--format", "json", "--no-progress", "--timeout", "120", str(path)],
        env=env, capture_output=True, text=True, timeout=timeout,
    )
    assert result.stdout, result.stderr[-3000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def resnet_report() -> dict:
    return _fxls_check_json(RESNET)


@needs_zoo
def test_resnet_file_runs_in_place(resnet_report: dict) -> None:
    """torchvision/models/resnet.py imports (relative imports, registries) where it lives."""
    (file_report,) = resnet_report["files"]
    assert file_report["path"] == str(RESNET)
    fatal = [d for d in file_report["diagnostics"] if d["code"] in ("FX100", "FX102")]
    assert not fatal, fatal
    names = {m["name"] for m in file_report["modules"]}
    assert {"BasicBlock", "Bottleneck", "ResNet"} <= names


@needs_zoo
def test_resnet_classes_are_traced(resnet_report: dict) -> None:
    """The classes need constructor arguments: fxls builds them through the file's factories
    (`resnet18(weights=None)`...) and traces the blocks inside the root."""
    (file_report,) = resnet_report["files"]
    status = {m["name"]: m for m in file_report["modules"]}
    for name in ("BasicBlock", "Bottleneck", "ResNet"):
        assert status[name]["status"] in ("traced", "partial"), status[name]
        assert status[name]["nodes"], status[name]


@needs_zoo
def test_timm_notrace_registrations_are_honoured() -> None:
    """timm's nasnet reaches `timm.layers.padding.pad_same`, whose data-dependent padding timm
    keeps out of traces (its layers are registered with register_notrace_module): as timm's
    own FX configuration traces it, fxls reports no FX001 there, and registered classes are
    leaves with a reason."""
    report = _fxls_check_json(SITE / "timm" / "models" / "nasnet.py")
    (file_report,) = report["files"]
    assert [d for d in file_report["diagnostics"] if d["code"] == "FX001"] == []
    statuses = {m["status"] for m in file_report["modules"]}
    assert statuses <= {"traced", "skipped"}, file_report["modules"]
    for module in file_report["modules"]:
        if module["status"] == "skipped":
            assert module["reason"] == "a leaf module by timm's register_notrace_module"
