"""A user file for the warmth tests, and a job target that exports its model the way the
export tier does, answering torch's own count of fake-tensor cache hits and misses."""

from __future__ import annotations

from typing import Any

SOURCE = '''import torch
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(13, 7)
        self.norm = nn.LayerNorm(7)

    def forward(self, x):  # fxls: args (torch.randn(3, 13),)
        return torch.relu(self.norm(self.fc(x))).sum(-1)
'''


def export_misses(params: dict[str, Any]) -> dict[str, int]:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    namespace: dict[str, Any] = {"__name__": "warmth_model"}
    exec(compile(SOURCE, "warmth_model.py", "exec"), namespace)
    model = namespace["Small"]()
    FakeTensorMode.cache_hits = FakeTensorMode.cache_misses = 0
    torch.export.export(model, (torch.randn(3, 13),))
    return {"hits": FakeTensorMode.cache_hits, "misses": FakeTensorMode.cache_misses}
