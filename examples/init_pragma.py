"""Modules whose constructor has required arguments.

fxls must build each module before tracing it. ``Projection`` says how with an ``init``
pragma; ``Classifier`` does not, so fxls reports FX101 (information) at its class name and
offers a quick fix that inserts an ``init`` pragma stub to fill in.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


# fxls: init d_in=16, d_out=4
class Projection(nn.Module):
    def __init__(self, d_in, d_out, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(d_in)
        self.fc = nn.Linear(d_in, d_out)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.fc(self.norm(x)))


class Classifier(nn.Module):  # FX101: required arguments and no init pragma
    def __init__(self, in_features, num_classes, hidden=32):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


if __name__ == "__main__":
    print(Projection(16, 4)(torch.randn(2, 16)).shape)
    print(Classifier(16, 3)(torch.randn(2, 16)).shape)
