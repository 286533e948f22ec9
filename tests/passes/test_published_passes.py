"""Published passes checked in place, as their authors wrote them: torch's
`fx/experimental/optimization.py` and `merge_matmul.py` (function passes that trace their
model) and Hugging Face optimum's `fx/optimization/transformations.py` (class-based passes,
`compose`), from the model zoo when it holds optimum. No false error on any of them; what
fxls finds in optimum is real: `FuseBatchNorm2dInConv2d` does not scale the conv's bias by the
batch norm's `weight / sqrt(running_var + eps)` (0.07 off on a calibrated conv-bn, in plain
torch too), so it changes the outputs (FX017).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.passes.test_passes import _check

ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"
OPTIMUM = ZOO_SITE / "optimum" / "fx" / "optimization" / "transformations.py"
TORCH_FX = Path(importlib.util.find_spec("torch").origin).parent / "fx" / "experimental"

needs_optimum = pytest.mark.skipif(
    not OPTIMUM.is_file(), reason=f"optimum not in the model zoo ({ZOO_SITE}): pip install "
    "--no-deps --target <zoo>/site optimum")

# a user's file composing optimum's transformations, bound to globals as its docs show
USES_OPTIMUM = '''import torch
from torch import nn
from optimum.fx.optimization import (
    ChangeTrueDivToMulByInverse,
    FuseBatchNorm2dInConv2d,
    MergeLinears,
    compose,
)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)

    def forward(self, x):
        return self.q(x) @ self.k(x).transpose(-2, -1) / 8.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x, image):
        return self.attention(x), self.bn(self.conv(image))


pipeline = compose(ChangeTrueDivToMulByInverse(), MergeLinears())
fusion = FuseBatchNorm2dInConv2d()
'''


@pytest.fixture
def zoo_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH")) if p))


def _checked(tmp_path: Path, files: dict[str, str]) -> dict[str, dict]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return _check(tmp_path, tmp_path)


def _errors(found: dict) -> list[dict]:
    return [d for d in found["diagnostics"] if d["severity"] in ("error", "warning")]


def _runs(found: dict) -> dict[str, list[dict]]:
    return {p["name"]: p["runs"] for p in found.get("passes", [])}


def test_torchs_optimization_and_merge_matmul_in_place(tmp_path):
    found = _checked(tmp_path, {
        "optimization.py": (TORCH_FX / "optimization.py").read_text(encoding="utf-8"),
        "merge_matmul.py": (TORCH_FX / "merge_matmul.py").read_text(encoding="utf-8")})
    for name, expected in (("optimization.py", {"fuse", "remove_dropout"}),
                           ("merge_matmul.py", {"merge_matmul"})):
        assert _errors(found[name]) == [], found[name]["diagnostics"]
        runs = _runs(found[name])
        assert expected <= set(runs), runs
        assert all(run["problem"] is None for each in expected for run in runs[each]), runs


@needs_optimum
def test_optimums_transformations_in_place(tmp_path, zoo_on_path):
    found = _checked(tmp_path, {"transformations.py": OPTIMUM.read_text(encoding="utf-8")})
    found = found["transformations.py"]
    assert _errors(found) == [], found["diagnostics"]
    runs = _runs(found)
    classes = {"MergeLinears", "FuseBiasInLinear", "ChangeTrueDivToMulByInverse",
               "FuseBatchNorm2dInConv2d", "FuseBatchNorm1dInLinear", "DeepCopy",
               "LintAndRecompile"}
    assert set(runs) == classes  # the abstract bases are no passes
    assert all(run["problem"] is None for each in runs.values() for run in each), runs
    changed = {d["module"] for d in found["diagnostics"] if d["code"] == "FX017"}
    assert changed == {"FuseBatchNorm2dInConv2d"}, found["diagnostics"]


@needs_optimum
def test_a_users_compose_chain_of_optimums_transformations(tmp_path, zoo_on_path):
    found = _checked(tmp_path, {"uses_optimum.py": USES_OPTIMUM})["uses_optimum.py"]
    assert _errors(found) == [], found["diagnostics"]
    runs = _runs(found)
    (run,) = runs["pipeline"]  # the chain, run through its __call__ on the file's Net
    assert run["graph"] == "Net" and run["problem"] is None and run["added"], run
    changed = [d for d in found["diagnostics"] if d["code"] == "FX017"]
    assert [d["module"] for d in changed] == ["fusion"], found["diagnostics"]


def test_a_pass_of_torchs_own_raising_is_reported_at_its_line_in_place(tmp_path):
    """torch's own pass files, checked where they live: their frames are torch's (not the
    user's, to fxcore), and the FX004 of a pass raising on a representative graph is at the
    pass's line that raised all the same, not at its ``def``."""
    where = TORCH_FX.parent / "passes" / "utils" / "matcher_with_name_node_map_utils.py"
    found = _check(tmp_path, where)[where.name]
    raising = "if gm._out_spec is None:"
    (line,) = [n for n, text in enumerate(where.read_text(encoding="utf-8").splitlines())
               if text.strip() == raising]
    column = where.read_text(encoding="utf-8").splitlines()[line].index("gm._out_spec")
    assert [(d["code"], d["severity"], d["range"]) for d in found["diagnostics"]] == [
        ("FX004", "information", {"start": {"line": line, "character": column},
                                  "end": {"line": line, "character": column + 12}})]
    assert "(raised by the pass `_split_to_graph_and_name_node_map`" in \
        found["diagnostics"][0]["message"]
