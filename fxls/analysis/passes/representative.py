"""Small graphs a file of passes runs on when it builds no model of its own and the project
names none (``pass_models``): the shapes passes are written for (linear layers, conv-bn-relu,
attention, a residual add)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(0.1)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(self.act(self.fc1(x))))


class ConvBnReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn(self.conv(x)))
        return torch.relu(self.bn2(self.conv2(x)))


class AttentionBlock(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        q = q.reshape(b, n, self.heads, d // self.heads).transpose(1, 2)
        k = k.reshape(b, n, self.heads, d // self.heads).transpose(1, 2)
        v = v.reshape(b, n, self.heads, d // self.heads).transpose(1, 2)
        attention = F.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        out = (attention @ v).transpose(1, 2).reshape(b, n, d)
        return x + self.proj(out)


class ResidualBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


#: name -> (class, example inputs)
GRAPHS: dict[str, tuple[type[nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "MLP": (MLP, lambda: (torch.randn(2, 16),)),
    "ConvBnReLU": (ConvBnReLU, lambda: (torch.randn(1, 3, 8, 8),)),
    "AttentionBlock": (AttentionBlock, lambda: (torch.randn(2, 4, 16),)),
    "ResidualBlock": (ResidualBlock, lambda: (torch.randn(1, 8, 8, 8),)),
}
