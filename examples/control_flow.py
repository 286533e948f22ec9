"""FX001: a traced value decides Python control flow.

While tracing, ``x`` is a Proxy with no values, so ``if``/``assert``/ternary cannot pick a
branch. fxls reports each condition; every module here runs fine eagerly.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class GatedResidual(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        if x.sum() > 0:  # FX001 -> quick fix: out = torch.where(...)
            out = h + x
        else:
            out = h - x
        return out


# fxls: args (torch.randn(4, 16),)
class FlatOnly(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        assert x.dim() == 2, "expected (batch, features)"  # FX001 -> torch._assert
        return self.fc(x)


class SignFlip(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return h if h.mean() > 0 else -h  # FX001 -> torch.where(h.mean() > 0, h, -h)


class Head(nn.Module):
    def __init__(self, dim=16, classes=4):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x, normalize=True):
        y = self.fc(x)
        if normalize:  # FX001: `normalize` is traced too -> quick fix: concrete pragma
            y = F.normalize(y, dim=-1)
        return y
