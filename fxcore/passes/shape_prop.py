"""ShapeProp: run the graph on example inputs and record each node's tensor metadata."""

from __future__ import annotations

import copy
import traceback
from typing import Any, NamedTuple

import torch
from torch._guards import detect_fake_mode

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

    As in torch.fx, ``fake_mode`` (or a fake mode active around the constructor) runs the
    graph on fake tensors: a fake copy of the module, the inputs made fake, nothing
    computed. Inputs may also be meta tensors, which likewise compute nothing. Unbacked
    symbols of a ShapeEnv are not rebound (torch.fx's symbolic-shape machinery).

    A node that fails prints its traceback and raises ``RuntimeError("ShapeProp error for:
    node=...")`` from the error, as torch.fx does; a subclass that reports errors itself sets
    ``wrap_node_errors = False`` to get the error as raised.
    """

    wrap_node_errors = True

    def __init__(self, gm: torch.nn.Module, fake_mode: Any = None) -> None:
        super().__init__(gm)
        if fake_mode is None:
            fake_mode = detect_fake_mode()
        self.fake_mode = fake_mode
        self.fake_module: torch.nn.Module | None = None
        if fake_mode is not None:
            from torch._subclasses.fake_tensor import FakeCopyMode

            with FakeCopyMode(fake_mode):
                self.fake_module = copy.deepcopy(self.module)
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        try:
            if self.fake_mode is None:
                result = super().run_node(n)
            else:
                from torch._dispatch.python import enable_python_dispatcher

                with self.fake_mode, enable_python_dispatcher():
                    result = super().run_node(n)
        except Exception as error:
            if not self.wrap_node_errors:
                raise
            traceback.print_exc()
            raise RuntimeError(
                f"ShapeProp error for: node={n.format_node()} with meta={n.meta}"
            ) from error
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
        if self.fake_module is not None:
            assert self.fake_mode is not None
            args = tuple(
                self.fake_mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args
            )
            return self._run_on(self.fake_module, args)
        if any(isinstance(a, torch.Tensor) and a.is_meta for a in args):
            return self._run_on(copy.deepcopy(self.module).to("meta"), args)
        return self.run(*args)

    def _run_on(self, module: torch.nn.Module, args: tuple[Any, ...]) -> Any:
        """Run the graph with ``module`` standing in for the real one (fake or meta)."""
        real_module = self.module
        self.module = module
        try:
            return self.run(*args)
        finally:
            self.module = real_module
