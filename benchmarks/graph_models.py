"""Generated model files for the graph view's tests and benchmark: a hierarchical model
(stages -> blocks -> attention and MLP) of about ``stages * blocks * 18`` nodes."""

from __future__ import annotations

MODEL = '''import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        return self.proj(attn @ v)


class Mlp(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 2)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(dim * 2, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class Stage(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.downsample = nn.Linear(dim, dim)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.downsample(x)


# fxls: init stages=STAGES, depth=DEPTH
class Big(nn.Module):
    # fxls: args (torch.randn(1, 4, 8),)
    def __init__(self, stages=STAGES, depth=DEPTH, dim=8):
        super().__init__()
        self.stem = nn.Linear(dim, dim)
        self.stages = nn.ModuleList(Stage(dim, depth) for _ in range(stages))
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return self.head(x.mean(dim=1))
'''


def model_source(stages: int, depth: int) -> str:
    """A file with the class ``Big``: ``stages * (depth * 18 + 1) + 6`` nodes."""
    return MODEL.replace("STAGES", str(stages)).replace("DEPTH", str(depth))


#: user files the graph benchmarks and tests draw (the model zoo on PYTHONPATH)
VIT = """\
import timm
import torch
from torch import nn


class Vit(nn.Module):
    # fxls: args (torch.randn(1, 3, 224, 224),)
    def __init__(self):
        super().__init__()
        self.vit = timm.create_model("vit_base_patch16_224", pretrained=False)

    def forward(self, x):
        return self.vit(x)
"""

#: BERT behind a data-dependent branch (torch.export fails on it; draft_export drafts it)
BERT_BRANCHED = """\
import torch
from torch import nn
from transformers import BertConfig, BertModel


class BertClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64,
                                             num_attention_heads=2, intermediate_size=128,
                                             vocab_size=500), add_pooling_layer=False)
        self.head = nn.Linear(64, 2)

    def forward(self, x):  # fxls: args (torch.randint(0, 500, (2, 16)),)
        feats = self.backbone(x).last_hidden_state
        if feats.mean() > 0:
            feats = feats * 2
        return self.head(feats)
"""
