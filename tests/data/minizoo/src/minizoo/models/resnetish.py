from torch import nn

from ..layers import ConvBnAct
from ..registry import load_pretrained, register_model

__all__ = ["TinyResNet", "tinyresnet10", "tinyresnet18"]


class BasicBlock(nn.Module):
    def __init__(self, in_chs, out_chs, stride=1):
        super().__init__()
        self.conv1 = ConvBnAct(in_chs, out_chs, stride)
        self.conv2 = nn.Conv2d(out_chs, out_chs, 3, 1, 1)
        self.shortcut = (nn.Conv2d(in_chs, out_chs, 1, stride)
                         if stride != 1 or in_chs != out_chs else nn.Identity())

    def forward(self, x):
        return self.conv2(self.conv1(x)) + self.shortcut(x)


class TinyResNet(nn.Module):
    def __init__(self, block, layers, widths=(8, 16), num_classes=10):
        super().__init__()
        self.stem = ConvBnAct(3, widths[0])
        stages = []
        in_chs = widths[0]
        for depth, width in zip(layers, widths):
            stages.append(self._make_layer(block, in_chs, width, depth))
            in_chs = width
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(in_chs, num_classes)

    def _make_layer(self, block, in_chs, out_chs, depth):
        return nn.Sequential(*[block(in_chs if i == 0 else out_chs, out_chs, 2 if i == 0 else 1)
                               for i in range(depth)])

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.head(x.mean((2, 3)))


def _create(variant, pretrained=False, **kwargs):
    model = TinyResNet(**kwargs)
    if pretrained:
        load_pretrained(model, variant)
    return model


@register_model
def tinyresnet10(pretrained=False, **kwargs):
    return _create("tinyresnet10", pretrained, block=BasicBlock, layers=(1, 1), **kwargs)


@register_model
def tinyresnet18(pretrained=False, **kwargs):
    return _create("tinyresnet18", pretrained, block=BasicBlock, layers=(2, 2), **kwargs)
