"""FX020: a rewrite rule matches. These trace fine; each quick fix swaps a hand-written
pattern for the equivalent fused PyTorch op (smaller graph, faster kernels)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F  # used by the quick fixes (F.silu, F.linear, F.relu)


class SwishMLP(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.fc1(x)
        h = h * torch.sigmoid(h)  # FX020 -> F.silu(h)
        return self.fc2(h)


# fxls: args (torch.randn(4, 16),)
class ManualLinearReLU(nn.Module):
    """A linear layer written by hand, followed by a hand-written ReLU."""

    def __init__(self, d_in=16, d_out=8):
        super().__init__()
        self.w = nn.Parameter(torch.randn(d_out, d_in) / math.sqrt(d_in))
        self.b = nn.Parameter(torch.zeros(d_out))

    def forward(self, x):
        y = torch.matmul(x, self.w.t()) + self.b  # FX020 -> F.linear(x, self.w, self.b)
        return (y > 0) * y  # FX020 -> F.relu(y)


# fxls: args (torch.randn(2, 3, 16),)
class Reshaper(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = x.transpose(1, 2).transpose(1, 2)  # FX020 -> x (the transposes cancel)
        h = self.fc(h).view(-1, 16).view(2, 3, 4, 4)  # FX020 -> .view(2, 3, 4, 4)
        return torch.cat([h], dim=1)  # FX020 -> h
