"""Every problem in one run past guard clauses: a stand-in (a condition taken as True, a
length of 1, an iteration of one element) that makes the code raise no longer ends the
trace; the search tries the other stand-ins and reports the sites after the guard too."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch.fx

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings

GUARDED = '''import torch
import torch.nn.functional as F
from torch import nn


# fxls: args (torch.randn(2, 8),)
class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.shape[-1] != 8:
            raise ValueError(f"expected 8 features, got {x.shape[-1]}")
        h = self.fc(x)
        n = int(h.sum())
        for row in h:
            h = h + row
        return h * n


# fxls: args (torch.randn(2, 4, 6, 5),)
class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = 2

    def forward(self, x):
        b, n, _, h = *x.shape, self.heads
        sizes = x.shape[-2:]
        if len(sizes) != 2:
            raise ValueError("expecting the last two dimensions to be H and W")
        y = x.view(b, n, -1)
        if y.mean() > 0:
            y = y * 2
        return y


class Transform(nn.Module):
    def forward(self, images):
        if images.dim() != 4:
            raise ValueError(f"expected a batch of images, got {images.dim()} dimensions")
        h, w = images.shape[-2:]
        return (images - 0.5) / 0.25, h, w


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 4, 1)

    def forward(self, features):
        return [self.conv(f) for f in features]


# fxls: args (torch.randn(1, 3, 32, 32),)
class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.transform = Transform()
        self.backbone = nn.Conv2d(3, 8, 3, padding=1)
        self.head = Head()

    def forward(self, images):
        x, h, w = self.transform(images)
        features = [self.backbone(x), F.max_pool2d(self.backbone(x), 2)]
        scores = self.head(features)
        if h * w > 1000:
            scores = scores[:1]
        return torch.cat([s.flatten(1) for s in scores], 1)
'''


def _line(needle: str) -> int:
    return GUARDED[: GUARDED.index(needle)].count("\n") + 1


@pytest.fixture(scope="module")
def diagnostics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, int]]]:
    folder = tmp_path_factory.mktemp("guards")
    path = folder / "guards_model.py"
    path.write_text(GUARDED, encoding="utf-8")
    report = analyze_source(str(path), GUARDED, Settings(project=ProjectLayout(root=str(folder))))
    found: dict[str, list[tuple[str, int]]] = {}
    for item in report.diagnostics:
        found.setdefault(item.module or "", []).append((item.code, item.span.line))
    return found


def test_a_guard_clause_does_not_hide_the_sites_after_it(diagnostics) -> None:
    assert diagnostics["Guarded"] == [
        ("FX001", _line("x.shape[-1] != 8")),
        ("FX003", _line("int(h.sum())")),
        ("FX002", _line("for row in h")),
    ]


def test_lengths_and_unpacking_take_the_values_the_code_needs(diagnostics) -> None:
    # `*x.shape` unpacked into four names, `len(sizes) != 2`: no follow-on FX004
    assert diagnostics["Heads"] == [
        ("FX002", _line("b, n, _, h = *x.shape")),
        ("FX003", _line("len(sizes) != 2")),
        ("FX001", _line("y.mean() > 0")),
    ]


def test_a_detection_style_model_reports_every_site_in_one_run(diagnostics) -> None:
    # the transform's guard, then the root's condition after the transform (`h, w = ...`
    # unpacks a traced shape, which torch.fx supports); the head's list, left unused by the
    # branch taken on a stand-in, is not called dead code; Head, traced on its own, is given
    # the list of two feature maps Detector gives it (no FX002 on `for f in features`)
    everything = sorted(item for found in diagnostics.values() for item in found)
    assert everything == sorted([
        *diagnostics["Guarded"], *diagnostics["Heads"],
        ("FX001", _line("images.dim() != 4")),
        ("FX001", _line("h * w > 1000")),
    ])
    assert diagnostics["Detector"] == [("FX001", _line("h * w > 1000"))]


def test_torch_fx_stops_first_where_fxls_reports_first(tmp_path: Path) -> None:
    """The first site of each root is where torch.fx itself stops."""
    path = tmp_path / "guards_fx.py"
    path.write_text(GUARDED, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("guards_fx", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["guards_fx"] = module
    try:
        spec.loader.exec_module(module)
        for name, first in (("Guarded", "x.shape[-1] != 8"), ("Heads", "*x.shape"),
                            ("Detector", "images.dim() != 4")):
            with pytest.raises(Exception) as raised:
                torch.fx.symbolic_trace(getattr(module, name)())
            lines = [tb.lineno for tb in _frames(raised.tb) if tb.filename == str(path)]
            assert lines and lines[-1] == _line(first), (name, lines)
    finally:
        del sys.modules["guards_fx"]


def _frames(tb):  # type: ignore[no-untyped-def]
    import traceback

    return traceback.extract_tb(tb)
