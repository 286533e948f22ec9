"""FX016: with ``trace_mode = "both"``, where a module's train-mode graph parts from its
eval-mode graph."""

from __future__ import annotations

from typing import Any

import torch

from fxcore.graph_module import GraphModule
from fxcore.node import Node
from fxcore.recovering import trace_collecting_issues
from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import FileContext
from fxls.analysis.pipeline.node_tables import target_text
from fxls.report import Diagnostic


def mode_difference(
    instance: torch.nn.Module, concrete: Any, eval_graph: GraphModule, name: str,
    span: SourceSpan, context: FileContext,
) -> list[Diagnostic]:
    """Trace in train mode too and say where the two graphs part (the eval graph stays the
    module's graph), as torchvision's feature extraction does."""
    instance.train(True)
    try:
        train = trace_collecting_issues(instance, concrete, leaf_modules=context.leaf_names,
                                        autowrap_functions=context.autowrap)
    finally:
        instance.eval()
    if train.graph_module is None or train.issues:
        return []
    eval_nodes = list(eval_graph.graph.nodes)
    train_nodes = list(train.graph_module.graph.nodes)
    pairs = enumerate(zip(eval_nodes, train_nodes, strict=False))
    index = next((i for i, (left, right) in pairs
                  if (left.op, left.target) != (right.op, right.target)), None)
    if index is None:
        if len(eval_nodes) == len(train_nodes):
            return []
        index = min(len(eval_nodes), len(train_nodes))

    def described(nodes: list[Node]) -> str:
        return f"`{target_text(nodes[index])}`" if index < len(nodes) else "nothing more"

    where_node = train_nodes[index] if index < len(train_nodes) else eval_nodes[index]
    where = where_node.meta.get("source")
    if where is None or not context.file.is_reportable(where.file):
        where = span
    return [diagnostic(
        "FX016", f"`{name}` traces to different graphs in train and eval mode: from here, "
        f"train mode records {described(train_nodes)} where eval mode records "
        f"{described(eval_nodes)} (`self.training` decides this at trace time); the graph "
        "shown is the eval one", where, name)]
