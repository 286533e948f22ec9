"""FX003: a traced value is turned into a Python value.

``len()``, ``int()``, ``float()`` and ``range()`` need a real number, but while tracing a
tensor (and even ``x.size(0)``) is a Proxy. Keep sizes symbolic (``x.size(0)``) instead.
"""

import torch
import torch.nn as nn


# fxls: args (torch.randn(2, 4, 8),)
class FlattenHead(nn.Module):
    def __init__(self, channels=4, length=8, classes=3):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, padding=1)
        self.fc = nn.Linear(channels * length, classes)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        return self.fc(h.view(len(x), -1))  # FX003 -> quick fix: h.view(x.size(0), -1)


# fxls: args (torch.randn(2, 6, 8), torch.tensor([6, 3]))
class MaskedMean(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, lengths):
        max_len = int(lengths.max())  # FX003: the value is data-dependent
        mask = torch.arange(max_len) < lengths[:, None]
        h = self.proj(x[:, :max_len]) * mask[..., None]
        return h.sum(dim=1) / lengths[:, None]


# fxls: args (torch.randn(2, 5, 8),)
class Smoother(nn.Module):
    """An exponential moving average over time, unrolled with a Python loop."""

    def __init__(self, dim=8, decay=0.9):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.decay = decay

    def forward(self, x):
        h = self.fc(x)
        out = [h[:, 0]]
        for t in range(1, x.size(1)):  # FX003: x.size(1) is a Proxy, range() needs an int
            out.append(out[-1] * self.decay + h[:, t])
        return torch.stack(out, dim=1)
