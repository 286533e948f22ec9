"""Imported by a warm worker: a fixed torch RNG state, so jobs of two workers compare."""

import torch

torch.manual_seed(7)
