from .blocks import ConvBnAct, GatedMlp
from .norm import LayerNorm2d
