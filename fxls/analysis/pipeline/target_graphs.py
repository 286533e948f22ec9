"""What the report keeps of a graph the real torch made of a module (export's ATen program,
a subgraph dynamo compiled): each node's row as the editor shows it (``NodeInfo``: its ATen
op, shape and dtype from its FakeTensor, symbolic sizes as their symbols, the submodule it
came from, the analysed file's expression that made it)."""

from __future__ import annotations

import operator
from typing import Any

import torch

from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.stack_spans import NodePlaces, qualified_path
from fxls.report import NodeInfo, TargetGraph


def target_graph(gm: torch.fx.GraphModule, file: SourceFile, **extra: Any) -> TargetGraph:
    """The rows of ``gm``'s nodes, its code and its submodules' classes."""
    places = NodePlaces(file)
    nodes, module_types = [], {}
    for node in gm.graph.nodes:
        stack = _module_stack(node)
        nodes.append(_row(node, places, stack))
        for path, cls in stack:
            module_types.setdefault(path, cls)
    try:
        code = gm.code
    except Exception:  # a graph torch made but cannot print: its rows are what matters
        code = None
    return TargetGraph(nodes, code, {path: cls for path, cls in module_types.items() if path},
                       **extra)


def _row(node: torch.fx.Node, places: NodePlaces, stack: list[tuple[str, str]]) -> NodeInfo:
    row = NodeInfo(node.name, node.op, _target_text(node), _format(node.args),
                   _format(node.kwargs), [user.name for user in node.users])
    if node.op not in ("placeholder", "get_attr", "output"):
        row.span = places.span(node.meta)
    value = node.meta.get("val", node.meta.get("example_value"))
    if isinstance(value, torch.Tensor):
        row.shape = [size if isinstance(size, int) else str(size) for size in value.shape]
        row.dtype = str(value.dtype).replace("torch.", "")
    if stack:
        row.module_path, row.module_type = stack[-1]
    return row


def _module_stack(node: torch.fx.Node) -> list[tuple[str, str]]:
    """``nn_module_stack`` as (qualified path, class) pairs, outermost first: export's
    (``"blocks.0.fc1"``, its class's name) and dynamo's (``"L['self'].blocks[0].fc1"``,
    the class) alike; the module itself is ``""``."""
    found = []
    for value in (node.meta.get("nn_module_stack") or {}).values():
        if not (isinstance(value, tuple) and len(value) == 2):
            continue
        path, cls = value
        name = cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"
        found.append((qualified_path(str(path)), name))
    return found


_PUBLIC = (("torch.nn.functional", torch.nn.functional), ("torch", torch),
           ("operator", operator))


def _target_text(node: torch.fx.Node) -> str:
    """``aten.linear.default`` for an ATen op; a dynamo graph's functions by their public
    names (``torch.nn.functional.linear``, ``operator.mul``)."""
    target = node.target
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return str(target)
    name = getattr(target, "__name__", None)
    for public, namespace in _PUBLIC:
        if name and getattr(namespace, name, None) is target:
            return f"{public}.{name}"
    module = getattr(target, "__module__", None)
    return f"{module}.{name}" if module and name else str(target)


def _format(arg: Any) -> str:
    if isinstance(arg, torch.fx.Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple):
        inner = ", ".join(_format(item) for item in arg)
        return f"({inner}{',' if len(arg) == 1 else ''})"
    if isinstance(arg, list):
        return f"[{', '.join(_format(item) for item in arg)}]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{key}: {_format(value)}" for key, value in arg.items()) + "}"
    return str(arg)
