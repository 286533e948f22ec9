"""The worker job: analyse one file and return its report as plain data."""

from __future__ import annotations

from typing import Any

from fxls.analysis.pipeline import analyze_source
from fxls.settings import Settings


def analyze(params: dict[str, Any]) -> dict[str, Any]:
    settings = Settings.from_dict(params.get("settings") or {})
    report = analyze_source(params["path"], params["source"], settings)
    return report.to_dict()


_WARM_UP_MODEL = """import math
import torch
from torch import nn
import torch.nn.functional as F


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        h = self.norm(self.lin(x)).relu() * math.sqrt(2)
        if h.sum() > 0:
            h = h + 1
        print(h.shape)
        return F.gelu(h) * torch.sigmoid(h) + torch.ones(8)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(_Block() for _ in range(2))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x.view(x.size(0), -1)
"""


def __fxls_warm_up__() -> None:
    """Run the whole analysis once on a built-in model (our code, not the user's), so that
    lazy initialisation in torch, fxcore and here happens in the warm worker once."""
    import contextlib
    import io
    import sys
    import tempfile
    from pathlib import Path

    saved_path, saved_modules = list(sys.path), set(sys.modules)
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        path = Path(folder) / "fxls_warm_up_model.py"
        path.write_text(_WARM_UP_MODEL)
        analyze({"path": str(path), "source": _WARM_UP_MODEL,
                 "settings": Settings(root=folder).to_dict()})
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        if name.startswith(("fxls_warm_up_model", "_fxls_")):
            del sys.modules[name]


#: each pre-forked job process repeats the warm-up while it waits, so the pages a job
#: touches are already its own (copy-on-write) when the job arrives
__fxls_prepare_job__ = __fxls_warm_up__
