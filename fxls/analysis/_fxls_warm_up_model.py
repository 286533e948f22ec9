"""The model the worker's job processes analyse while they wait for a job (``job.warm_up``).

Small, but it goes through the paths a real file takes: common layers, functional calls,
tensor methods, a submodule class, inferred and pragma inputs, and a data-dependent branch.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return x + F.gelu(self.norm(self.proj(x))).mul(0.5)


# fxls: args (torch.randn(1, 3, 8, 8),)
class WarmUpNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Linear(64, 16)
        self.blocks = nn.ModuleList(Block() for _ in range(2))

    def forward(self, image):
        x = torch.relu(self.bn(self.conv(image)))
        x = F.adaptive_avg_pool2d(x, 4).flatten(1)
        x = self.head(x)
        for block in self.blocks:
            x = block(x)
        return torch.cat([x, x.softmax(-1)], dim=1)


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x
