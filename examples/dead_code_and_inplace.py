"""FX010 (unused computation) and FX011 (in-place op on a forward input).

Both trace, but the graph shows the problem: a node nobody uses is wasted work, and an
in-place op on an input silently changes the caller's tensor (and breaks autograd reuse).
"""

import torch
import torch.nn as nn


class GatedBlock(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    def forward(self, x):
        unused = self.proj(x)  # FX010: leftover from a refactor, never used
        g = torch.sigmoid(self.gate(x))
        norms = x.norm(dim=-1)  # FX010
        return g * x


# fxls: args (torch.randn(4, 16),)
class ShiftedInput(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        x.add_(1)  # FX011: mutates the caller's tensor -> quick fix: x = x.add(1)
        return self.fc(x)


# fxls: args (torch.randn(4, 16),)
class ReluFirst(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        x.relu_()  # FX011 -> quick fix: x = x.relu()
        return self.fc(x)
