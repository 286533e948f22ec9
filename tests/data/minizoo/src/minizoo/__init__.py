"""A small model zoo laid out like timm/torchvision: a registry, factories, layers."""
from .registry import create_model, list_models, register_model
from . import models
