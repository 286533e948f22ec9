"""A small self-attention encoder block built only from traceable operations: traces cleanly.

Shapes are read with ``x.size()`` / ``x.shape`` and passed straight to ``view``; they stay
symbolic in the graph. ``math.sqrt`` is applied to a Python int attribute (``self.head_dim``),
so it is computed once at trace time and becomes a plain constant.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# fxls: args (torch.randn(2, 10, 64),)
class SelfAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch, seq, d_model = x.size()
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        attn = F.softmax(scores, dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(batch, seq, d_model)
        return self.out(y)


# fxls: args (torch.randn(2, 10, 64),)
class EncoderBlock(nn.Module):
    def __init__(self, d_model=64, n_heads=4, d_ff=128, dropout=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.norm1(x)))
        x = x + self.drop(self.ff(self.norm2(x)))
        return x


if __name__ == "__main__":
    print(EncoderBlock()(torch.randn(2, 10, 64)).shape)
