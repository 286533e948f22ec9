"""What the report keeps of a traced graph for hover, inlay hints and the graph view: each
node's row (``NodeInfo``), the submodule calls (``CallInfo``), the classes of the
submodules; and the graphs the file binds to module globals."""

from __future__ import annotations

from typing import Any

import torch

from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Node, _format_arg
from fxls.analysis.calls import submodule_calls
from fxls.analysis.diagnostics import to_span
from fxls.analysis.named_args import named_arguments
from fxls.analysis.pipeline.class_places import class_places
from fxls.report import CallInfo, ModuleReport, NodeInfo, TraceStatus


def fill_node_tables(module_report: ModuleReport, gm: GraphModule,
                     backward: dict[str, str]) -> None:
    """The traced module's code, node rows (with backward node names), calls, classes
    and where those are defined."""
    module_report.code = gm.code
    module_report.nodes = [node_info(n, gm, backward) for n in gm.graph.nodes]
    module_report.calls = _call_infos(gm)
    module_report.module_types = _module_types(gm)
    module_report.class_places = class_places(gm)


def target_text(node: Node) -> str:
    """The name a user would write: ``torch.nn.functional.gelu``, not ``torch._C._nn.gelu``."""
    target = node.target
    name = getattr(target, "__name__", None)
    if node.op == "call_function" and name:
        for public, namespace in (("torch.nn.functional", torch.nn.functional), ("torch", torch)):
            if getattr(namespace, name, None) is target:
                return f"{public}.{name}"
    try:
        return Node._pretty_print_target(target)
    except Exception:
        return str(target)


def node_info(node: Node, gm: GraphModule | None, backward: dict[str, str]) -> NodeInfo:
    span = node.meta.get("source")
    info = NodeInfo(
        node.name, node.op, target_text(node), _format_arg(node.args),
        _format_arg(node.kwargs), [u.name for u in node.users],
        to_span(span) if span is not None else None,
    )
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        info.shape = [int(d) for d in meta.shape]
        info.dtype = str(meta.dtype).replace("torch.", "")
    module_stack = node.meta.get("nn_module_stack")
    if node.op == "call_module":
        info.module_path = str(node.target)
        try:
            if gm is None:
                raise AttributeError(node.target)
            submodule = gm.get_submodule(node.target)
            cls = type(submodule)
            info.module_type = f"{cls.__module__}.{cls.__qualname__}"
            info.module_params = sum(p.numel() for p in submodule.parameters())
        except AttributeError:
            pass
    elif module_stack:
        info.module_path = next(reversed(module_stack.values()))[0]
    info.backward = backward.get(node.name)
    named = named_arguments(node, gm)
    info.named_args = [[name, value] for name, value in named] if named else None
    return info


def _module_types(gm: GraphModule) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in gm.graph.nodes:
        for path, cls in (node.meta.get("nn_module_stack") or {}).values():
            if path not in found and isinstance(cls, type):
                found[path] = f"{cls.__module__}.{cls.__qualname__}"
    return found


def _call_infos(gm: GraphModule) -> list[CallInfo]:
    return [CallInfo(to_span(span), path, module_type, [n.name for n in nodes],
                     [n.name for n in inputs], [n.name for n in outputs])
            for span, path, module_type, nodes, inputs, outputs
            in submodule_calls(gm.graph.nodes)]


def module_graphs(namespace: dict[str, Any]) -> list[tuple[str, Graph]]:
    """fxcore graphs bound to module globals (built by passes at import), each once."""
    found: dict[int, tuple[str, Graph]] = {}
    for name, value in namespace.items():
        graph = value.graph if isinstance(value, GraphModule) else value
        if isinstance(graph, Graph):
            found.setdefault(id(graph), (name, graph))
    return list(found.values())


def graph_report(name: str, graph: Graph) -> ModuleReport:
    """A module-level graph's nodes, so hovering the pass's lines works too."""
    try:
        code = graph.python_code(root_module="self").src
    except Exception:
        code = None
    owner = graph.owning_module if isinstance(graph.owning_module, GraphModule) else None
    return ModuleReport(name, TraceStatus.TRACED, len(graph.nodes), None,
                        [node_info(n, owner, {}) for n in graph.nodes], code)
