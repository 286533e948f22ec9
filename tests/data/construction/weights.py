"""Factories and classes whose defaults would download weights (the sandbox refuses)."""

from torch import nn


class Weights:
    DEFAULT = "imagenet"


def _load(weights):
    if weights is not None:
        raise RuntimeError(f"downloading {weights}: network access refused")


class Detector(nn.Module):
    def __init__(self, num_classes=3, pretrained_backbone=True):
        super().__init__()
        _load("backbone" if pretrained_backbone else None)
        self.head = nn.Conv2d(3, num_classes, 1)

    def forward(self, x):
        return self.head(x)


class Segmenter(nn.Module):
    def __init__(self, backbone, classes):
        super().__init__()
        self.backbone = backbone
        self.classifier = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        return self.classifier(self.backbone(x))


def segmenter_small(*, weights=None, weights_backbone=Weights.DEFAULT, num_classes=4):
    _load(weights)
    _load(weights_backbone)
    return Segmenter(nn.Conv2d(3, 8, 3, padding=1), num_classes)
