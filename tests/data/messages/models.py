"""Messages in the user's terms: a library rejecting a traced value, a warning logged by
a helper of another file, a class built from inferred arguments whose inputs do not fit."""

import logging

import torch
from helpers.logs import warning_once
from torch import nn

logger = logging.getLogger(__name__)


def rearrange(x, pattern):
    if not isinstance(x, torch.Tensor):
        raise RuntimeError(f"Tensor type unknown to einops {type(x)}")
    return x


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return rearrange(self.lin(x), "b n d -> b d n")


class Warns(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        warning_once(logger, "slow path")
        return self.lin(x)


class Bottleneck(nn.Module):
    def __init__(self, inplanes, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1)
        self.conv2 = nn.Conv2d(planes, planes * 4, 1)

    def forward(self, x):
        return self.conv2(self.conv1(x)) + x
