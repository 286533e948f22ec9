"""FX012 (tensor baked into the graph as a constant) and FX013 (call runs only at trace time).

``torch.ones(4)`` takes no traced input, so it runs once while tracing and the resulting tensor
is stored in the graph as ``_tensor_constant0``. ``print`` runs while tracing (printing a
Proxy) and leaves nothing in the graph: the traced model never prints.
"""

import torch
import torch.nn as nn


class BiasedProjection(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        bias = torch.ones(4)  # FX012 -> quick fix: register it as a buffer in __init__
        return self.fc(x) + bias


# fxls: args (torch.randn(2, 8, 4),)
class LearnedPositions(nn.Module):
    def __init__(self, max_len=8, dim=4):
        super().__init__()
        self.max_len = max_len
        self.pos = nn.Embedding(max_len, dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        positions = torch.arange(self.max_len)  # FX012: a constant index tensor
        return self.fc(x) + self.pos(positions)


# fxls: args (torch.randn(2, 4),)
class DebugBlock(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        print(x.shape)  # FX013: prints a Proxy at trace time, absent from the graph
        return torch.tanh(self.fc(x))
