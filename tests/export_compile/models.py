"""Small models, one per failure kind of export and compile (tests/export_compile)."""

import os

import torch
import torch.nn as nn


@torch.library.custom_op("fxls_tests::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


class ValueBranch(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        # which way `if` goes decides which code dynamo sees after it: the same in every run
        nn.init.constant_(self.lin.weight, 0.1)
        nn.init.zeros_(self.lin.bias)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        k = torch.nonzero(y)
        if k.shape[0] > 3:
            y = y + 1
        return y


class Printing(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        x = x + 1
        print("shape", x.shape)
        return x.relu()


class RowLoop(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        out = []
        for row in x:
            out.append(row * 2)
        return torch.stack(out)


class CustomOp(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        y = no_fake(x)
        return y + 1


class FixedBatch(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    # fxls: dynamic {"x": {0: "batch"}}
    def forward(self, x):
        if x.shape[0] == 4:
            return x * 2
        return x


class Raising(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        x = x * 2
        raise ValueError("no such mode")


class Clean(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x):
        return self.lin(x).relu()


class CallsOs(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        return x + len(os.getcwd())
