"""ShapeProp: run the graph on example inputs and record each node's tensor metadata."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import torch

from fxcore.interpreter import Interpreter
from fxcore.node import Node, map_aggregate

__all__ = ["ShapeProp", "TensorMetadata"]


class TensorMetadata(NamedTuple):
    shape: torch.Size
    dtype: torch.dtype
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: torch.memory_format | None
    is_quantized: bool
    qparams: dict[str, Any]


_MEMORY_FORMATS = (torch.contiguous_format, torch.channels_last, torch.channels_last_3d)


def _extract_tensor_metadata(result: torch.Tensor) -> TensorMetadata:
    memory_format = None
    for candidate in _MEMORY_FORMATS:
        try:
            if result.is_contiguous(memory_format=candidate):
                memory_format = candidate
                break
        except RuntimeError:
            continue
    stride = result.stride() if result.layout == torch.strided else ()
    return TensorMetadata(
        result.shape,
        result.dtype,
        result.requires_grad,
        tuple(stride),
        memory_format,
        result.is_quantized,
        {},
    )


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*inputs)`` fills ``node.meta['tensor_meta']`` and ``['type']``.

    Inputs may be meta tensors: nothing is computed then, only shapes and dtypes.
    """

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        found_tensor = False

        def extract(value: Any) -> Any:
            nonlocal found_tensor
            if isinstance(value, torch.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(value)
            return value

        meta = map_aggregate(result, extract)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        on_meta = any(isinstance(a, torch.Tensor) and a.is_meta for a in args)
        if not on_meta:
            return self.run(*args)
        real_module = self.module
        self.module = copy.deepcopy(real_module).to("meta")
        try:
            return self.run(*args)
        finally:
            self.module = real_module
