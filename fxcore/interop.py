"""Conversion between fxcore and torch.fx GraphModules (the only module importing torch.fx).

Both directions copy the graph node by node (same ops, names, targets, args, kwargs) and
keep the module's parameters, buffers and submodules, so behaviour is unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from fxcore import _wrap_registry
from fxcore._pytree import PyTreeInfo
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule

__all__ = ["to_torch_fx", "from_torch_fx", "adopt_torch_fx_wraps"]


def _copy_nodes(source_nodes: Any, target_graph: Any, map_arg: Any) -> None:
    env: dict[Any, Any] = {}
    for node in source_nodes:
        args = map_arg(node.args, lambda n: env[n])
        kwargs = map_arg(node.kwargs, lambda n: env[n])
        copied = target_graph.create_node(
            node.op, node.target, tuple(args), dict(kwargs), node.name, node.type
        )
        copied.meta = dict(node.meta)
        env[node] = copied


def to_torch_fx(gm: GraphModule) -> torch.fx.GraphModule:
    """A torch.fx GraphModule with the same graph and attributes as ``gm``."""
    from fxcore.node import map_arg

    graph = torch.fx.Graph()
    _copy_nodes(gm.graph.nodes, graph, map_arg)
    info = gm.graph._pytree_info
    if info is not None:
        graph._codegen = torch.fx.graph._PyTreeCodeGen(torch.fx.graph._PyTreeInfo(*info))
    return torch.fx.GraphModule(gm, graph, type(gm).__name__)


def from_torch_fx(gm: torch.fx.GraphModule) -> GraphModule:
    """An fxcore GraphModule with the same graph and attributes as ``gm``."""
    graph = Graph()
    with graph._recording_off():
        _copy_nodes(gm.graph.nodes, graph, torch.fx.node.map_arg)
    codegen = gm.graph._codegen
    if isinstance(codegen, torch.fx.graph._PyTreeCodeGen):
        graph._pytree_info = PyTreeInfo(*codegen.pytree_info)
    return GraphModule(gm, graph, type(gm).__name__)


def adopt_torch_fx_wraps() -> int:
    """Honour ``torch.fx.wrap(...)`` registrations in fxcore traces; returns how many."""
    registry = getattr(torch.fx._symbolic_trace, "_wrapped_fns_to_patch", {})
    for key, frame_dict in list(registry.items()):
        _wrap_registry._wrapped_fns_to_patch.setdefault(key, frame_dict)
    return len(registry)
