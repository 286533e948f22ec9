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


NASNET = SITE / "timm" / "models" / "nasnet.py"


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """resnet.py's and timm's nasnet.py's reports by path, both checked in place by one
    ``fxls check``."""
    fxls = REPO / ".venv" / "bin" / "fxls"
    cmd = [str(fxls)] if fxls.exists() else [sys.executable, "-m", "fxls"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [*cmd, "check", "--format", "json", "--no-progress", "--timeout", "120", str(RESNET),
         str(NASNET)],
        env=env, capture_output=True, text=True, timeout=360,
    )
    assert result.stdout, result.stderr[-3000:]
    return {report["path"]: report for report in json.loads(result.stdout)["files"]}


@needs_zoo
def test_resnet_file_runs_in_place(reports: dict[str, dict]) -> None:
    """torchvision/models/resnet.py imports (relative imports, registries) where it lives."""
    file_report = reports[str(RESNET)]
    fatal = [d for d in file_report["diagnostics"] if d["code"] in ("FX100", "FX102")]
    assert not fatal, fatal
    names = {m["name"] for m in file_report["modules"]}
    assert {"BasicBlock", "Bottleneck", "ResNet"} <= names


@needs_zoo
def test_resnet_classes_are_traced(reports: dict[str, dict]) -> None:
    """The classes need constructor arguments: fxls builds them through the file's factories
    (`resnet18(weights=None)`...) and traces the blocks inside the root."""
    file_report = reports[str(RESNET)]
    status = {m["name"]: m for m in file_report["modules"]}
    for name in ("BasicBlock", "Bottleneck", "ResNet"):
        assert status[name]["status"] in ("traced", "partial"), status[name]
        assert status[name]["nodes"], status[name]


@needs_zoo
def test_timm_notrace_registrations_are_honoured(reports: dict[str, dict]) -> None:
    """timm's nasnet reaches `timm.layers.padding.pad_same`, whose data-dependent padding timm
    keeps out of traces (its layers are registered with register_notrace_module): as timm's
    own FX configuration traces it, fxls reports no FX001 there, and registered classes are
    leaves with a reason."""
    file_report = reports[str(NASNET)]
    assert [d for d in file_report["diagnostics"] if d["code"] == "FX001"] == []
    statuses = {m["status"] for m in file_report["modules"]}
    assert statuses <= {"traced", "skipped"}, file_report["modules"]
    for module in file_report["modules"]:
        if module["status"] == "skipped":
            assert module["reason"] == "a leaf module by timm's register_notrace_module"


VIT = SITE / "timm" / "models" / "vision_transformer.py"
_VIT_HOVER = r'''
import json, sys
from pathlib import Path
from fxls.analysis.pipeline import analyze_source
from fxls.server.hover import hover_text as _hover_text
from fxls.server.inlay import shape_hints
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
path = Path(sys.argv[1])
source = path.read_text()
report = analyze_source(str(path), source,
                        Settings(project=ProjectLayout(root=str(path.parents[1]))))
lines = source.splitlines()
line = next(i for i, text in enumerate(lines) if "self.ls1(self.attn(self.norm1(x)" in text)
out = {}
for needle in ("self.norm1", "self.attn", "self.ls1"):
    col = len(lines[line][:lines[line].index(needle) + 6].encode())
    out[needle] = _hover_text(report, str(path), line + 1, col, path.as_uri())
out["hints"] = [h for h in shape_hints(report, str(path), source) if h[0] == line + 1]
print(json.dumps(out))
'''


@pytest.mark.skipif(not VIT.is_file(), reason="timm not in the model zoo")
def test_vit_block_hover_names_the_submodule_under_the_cursor() -> None:
    """timm's Block: `self.norm1` and `self.attn` are traced through and `ls1` is an
    nn.Identity; the hover on each is that call (it used to be the `ls1` node for all three),
    and a line run by the 12 blocks is one summary, not 12 sections."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", _VIT_HOVER, str(VIT)],
                            env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.splitlines()[-1])
    norm1, attn, ls1 = out["self.norm1"], out["self.attn"], out["self.ls1"]
    assert "**submodule `norm1`** · `timm.layers.norm.LayerNorm` · in `Block`" in norm1
    assert "ls1" not in norm1 and "ls1" not in attn
    assert "**submodule `attn`** · `timm.layers.attention.Attention`" in attn
    assert "- instances: 12 (`blocks.0.norm1`, `blocks.1.norm1`, … `blocks.11.norm1`)" in norm1
    assert "This expression ran 12 times in `VisionTransformer`" in ls1
    for text in (norm1, attn, ls1):
        assert len(text.splitlines()) < 30, text
    assert out["hints"] and all("197" in label for _, _, label in out["hints"])
