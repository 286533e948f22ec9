import torch
from torch import nn


class ConvBnAct(nn.Module):
    def __init__(self, in_chs, out_chs, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class GatedMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.fc1(x)
        if h.mean() > 0:
            h = torch.relu(h)
        return self.fc2(h)
