"""FX002: a traced value is iterated.

A Proxy has no length, so ``for row in x`` (or a comprehension over it) cannot run while
tracing. Unpacking with a known length, e.g. ``q, k, v = t.chunk(3, -1)``, is fine.
"""

import torch
import torch.nn as nn


class PerSampleNorm(nn.Module):
    """Normalizes every sample on its own with a Python loop over the batch."""

    def __init__(self, dim=16, eps=1e-5):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.eps = eps

    def forward(self, x):
        h = self.fc(x)
        rows = []
        for row in h:  # FX002: iterate over a traced tensor
            rows.append((row - row.mean()) / (row.std() + self.eps))
        return torch.stack(rows)


def top_tokens(scores, k=2):
    # FX002 in a helper: quick fix `torch.fx.wrap("top_tokens")` keeps it as one graph call
    return torch.stack([s.topk(k).indices for s in scores])


# fxls: args (torch.randn(4, 16),)
class TokenPicker(nn.Module):
    def __init__(self, dim=16, vocab=32):
        super().__init__()
        self.norm = PerSampleNorm(dim)
        self.score = nn.Linear(dim, vocab)

    def forward(self, x):
        return top_tokens(self.score(self.norm(x)))
