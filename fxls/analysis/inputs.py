"""Example forward inputs: from the ``args`` pragma, else inferred from the first consumer."""

from __future__ import annotations

from typing import Any

import torch

from fxcore.graph_module import GraphModule
from fxcore.node import Node

_BATCH = 2
#: the spatial size of image inputs when the model does not say its own
_DEFAULT_SIZE = (32, 32)
_SIZE_ATTRIBUTES = ("img_size", "image_size", "input_size", "input_resolution")
_PASS_THROUGH_METHODS = {"float", "contiguous", "relu", "gelu", "sigmoid", "tanh", "clone",
                         "detach", "to", "type_as"}


def eval_pragma_args(text: str, namespace: dict[str, Any]) -> tuple[Any, ...]:
    scope = dict(namespace)
    scope.setdefault("torch", torch)
    value = eval(text, scope)
    return value if isinstance(value, tuple) else (value,)


#: the image size most image models are built for: tried when 32x32 does not fit and the
#: model does not say its own (EfficientFormer's last stage expects 7x7 features)
_COMMON_SIZE = (224, 224)


def retry_size(model: torch.nn.Module) -> tuple[int, int]:
    """The image size to try when small images do not fit: the model's own, else 224x224."""
    return spatial_size(model) or _COMMON_SIZE


def spatial_size(model: torch.nn.Module) -> tuple[int, int] | None:
    """The image size a model says it expects: its ``pretrained_cfg``/``default_cfg``
    ``input_size`` (timm), or an ``img_size``/``image_size``/``input_size`` attribute of it
    or of one of its first submodules (a patch embedding)."""
    for index, module in enumerate(model.modules()):
        if index > 64:
            break
        for name in ("pretrained_cfg", "default_cfg"):
            config = getattr(module, name, None)
            if isinstance(config, dict):
                size = _pair(config.get("input_size"), from_chw=True)
                if size is not None:
                    return size
        for name in _SIZE_ATTRIBUTES:
            size = _pair(module.__dict__.get(name))
            if size is not None:
                return size
    return None


def _pair(value: Any, from_chw: bool = False) -> tuple[int, int] | None:
    if isinstance(value, int) and not isinstance(value, bool) and 1 < value <= 4096:
        return (value, value)
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        if from_chw and len(value) == 3:
            value = value[1:]
        if len(value) == 2 and all(1 < v <= 4096 for v in value):
            return (int(value[0]), int(value[1]))
    return None


def input_for_layer(
    module: torch.nn.Module, size: tuple[int, int] = _DEFAULT_SIZE
) -> torch.Tensor | None:
    """An input a layer takes (token ids for an ``Embedding``, an image batch for a
    ``Conv2d``), or None for a layer that does not fix its input's shape."""
    nn = torch.nn
    if isinstance(module, nn.Linear):
        return torch.randn(_BATCH, module.in_features)
    if isinstance(module, nn.Bilinear):
        return None
    if isinstance(module, nn.Conv1d | nn.ConvTranspose1d):
        return torch.randn(_BATCH, module.in_channels, 32)
    if isinstance(module, nn.Conv2d | nn.ConvTranspose2d):
        return torch.randn(_BATCH, module.in_channels, *size)
    if isinstance(module, nn.Conv3d | nn.ConvTranspose3d):
        return torch.randn(_BATCH, module.in_channels, 8, 8, 8)
    if isinstance(module, nn.Embedding):
        return torch.randint(0, module.num_embeddings, (_BATCH, 8))
    if isinstance(module, nn.EmbeddingBag):
        return torch.randint(0, module.num_embeddings, (_BATCH, 8))
    if isinstance(module, nn.LayerNorm):
        return torch.randn(_BATCH, 8, *module.normalized_shape)
    if isinstance(module, nn.BatchNorm1d):
        return torch.randn(_BATCH, module.num_features)
    if isinstance(module, nn.BatchNorm2d | nn.InstanceNorm2d):
        return torch.randn(_BATCH, module.num_features, 16, 16)
    if isinstance(module, nn.BatchNorm3d):
        return torch.randn(_BATCH, module.num_features, 8, 8, 8)
    if isinstance(module, nn.GroupNorm):
        return torch.randn(_BATCH, module.num_channels, 16, 16)
    if isinstance(module, nn.RNNBase):
        if module.batch_first:
            return torch.randn(_BATCH, 8, module.input_size)
        return torch.randn(8, _BATCH, module.input_size)
    if isinstance(module, nn.MultiheadAttention):
        return torch.randn(8, _BATCH, module.embed_dim) if not module.batch_first else torch.randn(
            _BATCH, 8, module.embed_dim)
    return None


def _functional_linear_input(gm: GraphModule, call: Node) -> torch.Tensor | None:
    """An input for ``F.linear(x, weight, ...)`` whose weight is a parameter of the module."""
    weight = call.args[1] if len(call.args) > 1 else call.kwargs.get("weight")
    if not isinstance(weight, Node) or weight.op != "get_attr":
        return None
    try:
        value = gm.get_parameter(str(weight.target))
    except AttributeError:
        return None
    return torch.randn(_BATCH, value.shape[-1]) if value.dim() == 2 else None


def _consumer_input(
    gm: GraphModule, placeholder: Node, size: tuple[int, int], depth: int = 0
) -> torch.Tensor | None:
    for user in placeholder.users:
        if user.op == "call_module":
            try:
                module = gm.get_submodule(user.target)
            except AttributeError:
                continue
            found = input_for_layer(module, size)
            if found is not None:
                return found
        elif depth < 3 and user.op in ("call_method", "call_function"):
            name = user.target if isinstance(user.target, str) else getattr(
                user.target, "__name__", "")
            if name == "linear" and user.args and user.args[0] is placeholder:
                found = _functional_linear_input(gm, user)  # F.linear(x, self.w, ...)
                if found is not None:
                    return found
            if name in _PASS_THROUGH_METHODS or name in ("dropout", "relu", "gelu"):
                found = _consumer_input(gm, user, size, depth + 1)
                if found is not None:
                    return found
    return None


def _rank_used(placeholder: Node) -> int:
    """The number of dimensions ``forward`` reads off an input: ``B, N, C = x.shape`` or
    ``x.size(2)`` say at least 3 (0 when it reads none)."""
    rank = 0
    for user in placeholder.users:
        if user.op == "call_function" and user.target is getattr and user.args[1:] == ("shape",):
            for item in user.users:
                index = item.args[1] if len(item.args) > 1 else None
                if isinstance(index, int) and index >= 0:
                    rank = max(rank, index + 1)
        elif user.op == "call_method" and user.target == "size" and len(user.args) > 1:
            index = user.args[1]
            if isinstance(index, int) and index >= 0:
                rank = max(rank, index + 1)
    return rank


def _with_rank(value: torch.Tensor, rank: int) -> torch.Tensor:
    """``value`` with token dimensions of 8 after the batch, up to ``rank`` dimensions (a
    Linear's (2, C) becomes (2, 8, C) for a forward that unpacks B, N, C)."""
    if value.dim() < 2 or rank <= value.dim():
        return value
    shape = (value.shape[0], *(8,) * (rank - value.dim()), *value.shape[1:])
    if value.is_floating_point():
        return torch.randn(shape, dtype=value.dtype)
    return torch.zeros(shape, dtype=value.dtype)  # indices: 0 is always valid


def infer_inputs(
    gm: GraphModule, size: tuple[int, int] | None = None, *, leading_optional: bool = False
) -> tuple[Any, ...] | None:
    """Inputs for every required placeholder, or None when one of them cannot be inferred.
    Image inputs are ``size`` (default 32x32: small and fast; a model that needs its own
    size says so, see ``spatial_size``). With ``leading_optional``, the parameters with a
    default that follow get inputs too, up to the first whose consumer does not fix it
    (Hugging Face's ``forward(input_ids=None, attention_mask=None, ...)``)."""
    size = size or _DEFAULT_SIZE
    values: list[Any] = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        if node.target.startswith("*"):
            continue
        optional = bool(node.args)  # has a default
        if optional and not leading_optional:
            break  # left to the default
        found = _consumer_input(gm, node, size)
        if found is None and optional:
            break
        if found is None:
            return None
        values.append(_with_rank(found, _rank_used(node)))
    return tuple(values) if values else None
