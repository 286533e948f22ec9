"""fxcore: a from-scratch implementation of the torch.fx design that knows where nodes come from.

Symbolic tracing -> Graph IR -> transforms -> Python code generation, with torch.fx's public
API: ``import fxcore as fx`` runs programs written for ``torch.fx``. Beyond torch.fx, every
node records the span of user source that created it (``node.meta["source"]``), tracing can
collect every problem instead of stopping at the first (``trace_collecting_issues``), and
graphs convert to and from torch.fx (``fxcore.interop``).

Names are resolved lazily so that importing fxcore costs nothing until a part is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "Graph": "fxcore.graph",
    "CodeGen": "fxcore.graph",
    "Node": "fxcore.node",
    "map_arg": "fxcore.node",
    "map_aggregate": "fxcore.node",
    "has_side_effect": "fxcore.node",
    "Proxy": "fxcore.proxy",
    "TraceError": "fxcore.proxy",
    "GraphAppendingTracer": "fxcore.proxy",
    "Tracer": "fxcore._symbolic_trace",
    "symbolic_trace": "fxcore._symbolic_trace",
    "wrap": "fxcore._symbolic_trace",
    "ProxyableClassMeta": "fxcore._proxyable",
    "PH": "fxcore._symbolic_trace",
    "GraphModule": "fxcore.graph_module",
    "Interpreter": "fxcore.interpreter",
    "Transformer": "fxcore.interpreter",
    "replace_pattern": "fxcore.subgraph_rewriter",
    "trace_collecting_issues": "fxcore.recovering",
    "CollectedTrace": "fxcore.recovering",
    "TraceIssue": "fxcore.recovering",
    "IssueKind": "fxcore.recovering",
    "SourceSpan": "fxcore.source",
}

_SUBMODULES = {
    "node",
    "graph",
    "proxy",
    "graph_module",
    "interpreter",
    "subgraph_rewriter",
    "immutable_collections",
    "passes",
    "source",
    "recovering",
    "interop",
    "operator_schemas",
    "experimental",
    "autograd_view",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"fxcore.{name}")
    raise AttributeError(f"module 'fxcore' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)


if TYPE_CHECKING:
    from fxcore._proxyable import ProxyableClassMeta
    from fxcore._symbolic_trace import PH, Tracer, symbolic_trace, wrap
    from fxcore.graph import CodeGen, Graph
    from fxcore.graph_module import GraphModule
    from fxcore.interpreter import Interpreter, Transformer
    from fxcore.node import Node, has_side_effect, map_aggregate, map_arg
    from fxcore.proxy import GraphAppendingTracer, Proxy, TraceError
    from fxcore.recovering import CollectedTrace, IssueKind, TraceIssue, trace_collecting_issues
    from fxcore.source import SourceSpan
    from fxcore.subgraph_rewriter import replace_pattern
