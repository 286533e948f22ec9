"""A model in a project that targets torch.compile alone (copied into the e2e project's
`compiled/` folder by run.cjs, beside a pyproject.toml with `targets = ["compile"]`): the
print is a graph break, the loop over rows compiles fine."""
import torch
from torch import nn


class Talky(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        print("hidden", h.shape)
        for row in x:
            h = h + row
        return torch.relu(h)
