from torch import nn

from . import cycle_a


class Body(nn.Module):
    def __init__(self, width=4):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)


def head_factory():
    return cycle_a.Head()
