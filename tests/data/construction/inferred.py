"""Constructors nothing in this file builds with literal arguments: what each parameter is
comes from how the constructor uses it."""

import torch
from torch import nn


class FeedForward(nn.Module):
    """`mlp_dim`: not a size by its name, a size by its use (a layer's width)."""

    def __init__(self, dim, mlp_dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        return self.net(x)


class Stages(nn.Module):
    """`sm_dim` a width, `n_stages` a count (`range`), `fmap_size` a size."""

    def __init__(self, sm_dim, n_stages, fmap_size):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(sm_dim, sm_dim) for _ in range(n_stages)])
        self.pos = nn.Parameter(torch.zeros(fmap_size * fmap_size, sm_dim))

    def forward(self, x):
        for block in self.blocks:
            x = block(x) + self.pos.mean()
        return x


class PreNorm(nn.Module):
    """`fn`: a module, called in forward; the file passes a FeedForward there below."""

    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class Residual(nn.Module):
    """`net`: a module called in forward, never built with it in this file."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return x + self.net(x)


class Detector(nn.Module):
    """`backbone`: a module called in forward whose width the constructor reads."""

    def __init__(self, backbone, num_classes):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Conv2d(backbone.out_channels, num_classes, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


class Stack(nn.Module):
    """`block`: a class it calls to build its layers."""

    def __init__(self, block, dim_in, depth):
        super().__init__()
        self.layers = nn.Sequential(*[block(dim_in) for _ in range(depth)])

    def forward(self, x):
        return self.layers(x)


class LoRA(nn.Module):
    """A guessed size must pass the constructor's own check."""

    def __init__(self, dim, lora_rank):
        super().__init__()
        if lora_rank >= dim:
            raise ValueError(f"lora_rank ({lora_rank}) must be less than dim ({dim})")
        self.down = nn.Linear(dim, lora_rank, bias=False)
        self.up = nn.Linear(lora_rank, dim, bias=False)

    def forward(self, x):
        return x + self.up(self.down(x))


class Base(nn.Module):
    def __init__(self, num_anchors, min_size):
        super().__init__()
        self.head = nn.Conv2d(min_size, num_anchors * 4, 1)

    def forward(self, x):
        return self.head(x)


class Derived(Base):
    """`**kwargs` handed on to a base class that needs arguments."""

    def __init__(self, scale=2.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def forward(self, x):
        return super().forward(x) * self.scale


class Encoder(nn.Module):
    """`ff_params`: keyword arguments handed to FeedForward (`**ff_params`)."""

    def __init__(self, dim, ff_params):
        super().__init__()
        self.ff = FeedForward(dim=dim, **ff_params)

    def forward(self, x):
        return self.ff(x)


class Pyramid(nn.Module):
    """`dims`: a sequence of exactly three widths (`len(dims) == 3`)."""

    def __init__(self, dims):
        super().__init__()
        assert len(dims) == 3, "dims must be a tuple of 3"
        self.stages = nn.Sequential(*[nn.Linear(dims[i], dims[i + 1]) for i in range(2)])

    def forward(self, x):
        return self.stages(x)


class Patches(nn.Module):
    """An image size that its patches must divide: 96, not 32 (12 does not divide 32)."""

    def __init__(self, image_size, patch_size=12):
        super().__init__()
        assert image_size % patch_size == 0, "Image dimensions must be divisible by the patch"
        self.embed = nn.Conv2d(3, 8, patch_size, patch_size)

    def forward(self, x):
        return self.embed(x)


class Tokens(nn.Module):
    """Optional sizes that a check then wants: `depth=None`, `heads=None`."""

    def __init__(self, dim, depth=None, heads=None):
        super().__init__()
        assert depth is not None and heads is not None, "depth and heads must be supplied"
        self.layers = nn.ModuleList([nn.Linear(dim, dim * heads) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class LayerFactories(nn.Module):
    """`layers`: an object of layer factories it calls (`layers.conv(dim, dim)`)."""

    def __init__(self, dim, layers=None):
        super().__init__()
        assert layers is not None
        self.conv = layers.conv(dim, dim)
        self.act = layers.act()

    def forward(self, x):
        return self.act(self.conv(x))


class Impossible(nn.Module):
    """No value passes this check: FX101 names it, with its line."""

    def __init__(self, dim):
        super().__init__()
        assert dim < 0, f"dim must be negative, got {dim}"
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)


def make_block(dim):
    return PreNorm(dim, FeedForward(dim, dim * 2))


class Negative(nn.Module):
    """torch's layer rejects every tried width: FX101 points at the model's line."""

    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, 2 - dim)

    def forward(self, x):
        return self.lin(x)
