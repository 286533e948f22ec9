"""Small models of failure kinds first met in real code (tests/realmodels/test_real_targets.py):
each is what a model of the zoo does, in a few lines (tests/export_compile)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Holder:
    def __init__(self, value):
        self.value = value


class ReturnsObject(nn.Module):
    """transformers' models return a ``DynamicCache``: export cannot flatten it."""

    # fxls: args (torch.randn(2, 8),)
    def forward(self, x):
        return Holder(x + 1)


class CtcLoss(nn.Module):
    """wav2vec2's loss: a check of the labels' values, then a CTC loss whose output size
    depends on the target lengths (draft_export fails there after deciding the check)."""

    # fxls: args (torch.randn(12, 2, 5).log_softmax(-1), torch.randint(1, 5, (2, 4)))
    def forward(self, log_probs, targets):
        if targets.max() >= log_probs.shape[-1]:
            raise ValueError("label out of range")
        lengths = torch.full((log_probs.shape[1],), log_probs.shape[0])
        target_lengths = (targets > 0).sum(-1)
        return F.ctc_loss(log_probs, targets, lengths, target_lengths)


class RecurrentBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        x = x * 2
        out, _ = self.rnn(x)
        return out.relu()


class Recurrent(nn.Module):
    """timm's Sequencer: dynamo does not trace into an LSTM inside a block; it compiles up
    to the call and runs it in Python (in Sequencer explain lists the reason, then
    ``step_unsupported``, at the same statement: one break)."""

    # fxls: args (torch.randn(2, 5, 8),)
    def __init__(self):
        super().__init__()
        self.block = RecurrentBlock()

    def forward(self, x):
        return self.block(x + 1)
