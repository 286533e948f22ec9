import torch
from torch import nn


class ClsHead(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.fc = nn.Linear(dim, classes)

    def forward(self, x):
        return self.fc(x)


class Classifier(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.head = ClsHead(16, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


class Wide(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.tanh(self.fc(x))


def build_wide(width):
    return Wide(width)


class Mystery(nn.Module):
    def __init__(self, secret):
        super().__init__()
        self.secret = secret

    def forward(self, x):
        return x * self.secret


class Downloaded(nn.Module):
    def __init__(self, weights_url):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


WEIGHTS = "https://example.invalid/weights.pth"


def downloaded_model():
    import urllib.request

    urllib.request.urlopen(WEIGHTS, timeout=5)  # a factory that downloads its weights
    return Downloaded(WEIGHTS)


def build_broken():
    raise ValueError("bad entry point")
