from .resnetish import *
from .vitish import *
from . import cycle_a
