"""A plain multi-layer perceptron: traces cleanly, fxls reports nothing.

The first layer is an nn.Linear, so fxls infers the example input (a batch of
``in_features``-wide rows) without an ``args`` pragma.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, in_features=32, hidden=64, out_features=10, dropout=0.1):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.GELU(),
        )
        self.head = nn.Linear(hidden, out_features)

    def forward(self, x):
        h = self.body(x)
        return F.log_softmax(self.head(h), dim=-1)


# fxls: args (torch.randn(4, 1, 8, 8),)
class MLPClassifier(nn.Module):
    """Flattens an image-like input first, then reuses the MLP as a submodule."""

    def __init__(self, channels=1, height=8, width=8, classes=10):
        super().__init__()
        self.flatten = nn.Flatten()
        self.mlp = MLP(channels * height * width, 64, classes)

    def forward(self, x):
        return self.mlp(self.flatten(x))


if __name__ == "__main__":
    print(MLP()(torch.randn(4, 32)).shape)
    print(MLPClassifier()(torch.randn(4, 1, 8, 8)).shape)
