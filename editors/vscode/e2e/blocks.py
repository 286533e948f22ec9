"""A model of 76 nodes in twelve blocks, for the grouped graph view (copied into the e2e
project by run.cjs)."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc1(self.norm(x)).relu()
        return x + self.fc2(h) * 0.5


class Net(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.stem = nn.Linear(dim, dim)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(12)])
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        x = self.stem(x)
        x = self.blocks(x)
        return self.head(x)
