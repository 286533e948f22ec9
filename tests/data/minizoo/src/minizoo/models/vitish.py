from dataclasses import dataclass

import torch
from torch import nn

from ..layers.blocks import GatedMlp
from ..registry import register_model

__all__ = ["ViTConfig", "TinyViT", "tinyvit"]


@dataclass
class ViTConfig:
    img_size: int = 32
    patch_size: int = 8
    hidden_size: int = 256
    num_attention_heads: int = 8
    num_hidden_layers: int = 12
    intermediate_size: int = 1024


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).unbind(2)
        attn = torch.softmax(q.transpose(1, 2) @ k.transpose(1, 2).transpose(-2, -1), dim=-1)
        out = (attn @ v.transpose(1, 2)).transpose(1, 2).reshape(B, N, C)
        return self.proj(out)


class Layer(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.norm = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.mlp = GatedMlp(config.hidden_size, config.intermediate_size)

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class TinyViT(nn.Module):
    def __init__(self, config: ViTConfig):
        super().__init__()
        self.patch = nn.Conv2d(3, config.hidden_size, config.patch_size, config.patch_size)
        self.layers = nn.ModuleList(Layer(config) for _ in range(config.num_hidden_layers))

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        for layer in self.layers:
            x = layer(x)
        return x.mean(1)


@register_model
def tinyvit(pretrained=False, **kwargs):
    return TinyViT(ViTConfig(**kwargs))
