"""replace_pattern: find every occurrence of a pattern graph and splice in a replacement."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fxcore._symbolic_trace import symbolic_trace
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Node, map_arg

__all__ = ["Match", "replace_pattern", "find_matches"]


@dataclass
class Match:
    anchor: Node  # the node that produces the pattern's output
    nodes_map: dict[Node, Node]  # pattern node -> matched node


def _as_graph(pattern: Callable[..., Any] | Graph | GraphModule) -> Graph:
    if isinstance(pattern, GraphModule):
        return pattern.graph
    if isinstance(pattern, Graph):
        return pattern
    return symbolic_trace(pattern).graph


def _same_target(p: Node, n: Node) -> bool:
    if p.op != n.op:
        return False
    if p.op == "get_attr":
        return True  # attributes are matched by position, like placeholders
    return p.target == n.target


def _match_arg(p: Any, n: Any, nodes_map: dict[Node, Node], pattern_nodes: set[Node]) -> bool:
    if isinstance(p, Node):
        return isinstance(n, Node) and _match_node(p, n, nodes_map, pattern_nodes)
    if isinstance(p, list | tuple):
        return (
            isinstance(n, list | tuple)
            and len(p) == len(n)
            and all(_match_arg(a, b, nodes_map, pattern_nodes) for a, b in zip(p, n, strict=True))
        )
    if isinstance(p, dict):
        return (
            isinstance(n, dict)
            and p.keys() == n.keys()
            and all(_match_arg(p[k], n[k], nodes_map, pattern_nodes) for k in p)
        )
    return type(p) is type(n) and p == n


def _match_node(p: Node, n: Node, nodes_map: dict[Node, Node], pattern_nodes: set[Node]) -> bool:
    if p in nodes_map:
        return nodes_map[p] is n
    if p.op == "placeholder":
        if n in nodes_map.values():
            return False
        nodes_map[p] = n
        return True
    if not _same_target(p, n) or len(p.args) != len(n.args):
        return False
    nodes_map[p] = n
    if not _match_arg(p.args, n.args, nodes_map, pattern_nodes) or not _match_arg(
        p.kwargs, n.kwargs, nodes_map, pattern_nodes
    ):
        del nodes_map[p]
        return False
    return True


def find_matches(graph: Graph, pattern_graph: Graph) -> list[Match]:
    pattern_output = pattern_graph.output_node()
    returned = pattern_output.args[0]
    if not isinstance(returned, Node):
        raise ValueError("patterns must return a single value")
    pattern_nodes = {n for n in pattern_graph.nodes if n.op not in ("placeholder", "output")}
    matches: list[Match] = []
    claimed: set[Node] = set()
    for node in graph.nodes:
        nodes_map: dict[Node, Node] = {}
        if not _match_node(returned, node, nodes_map, pattern_nodes):
            continue
        inner = [nodes_map[p] for p in pattern_nodes if p in nodes_map]
        if any(n in claimed for n in inner):
            continue
        inner_set = set(inner)
        # intermediate values must not escape the matched region
        escapes = any(
            user not in inner_set
            for p in pattern_nodes
            if p is not returned and p in nodes_map
            for user in nodes_map[p].users
        )
        if escapes:
            continue
        claimed.update(inner)
        matches.append(Match(node, nodes_map))
    return matches


def replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule,
) -> list[Match]:
    """Replace every non-overlapping match of ``pattern`` in ``gm`` by ``replacement``."""
    pattern_graph = _as_graph(pattern)
    replacement_graph = _as_graph(replacement)
    graph = gm.graph
    matches = find_matches(graph, pattern_graph)
    pattern_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    for match in matches:
        inputs = [match.nodes_map[p] for p in pattern_placeholders if p in match.nodes_map]
        val_map: dict[Node, Any] = dict(zip(replacement_placeholders, inputs, strict=False))
        with graph.inserting_before(match.anchor):
            for r in replacement_graph.nodes:
                if r.op == "placeholder":
                    continue
                if r.op == "output":
                    new_value = map_arg(r.args[0], val_map.__getitem__)
                    break
                val_map[r] = graph.node_copy(r, val_map.__getitem__)
        match.anchor.replace_all_uses_with(new_value)
        for p in reversed(list(pattern_graph.nodes)):
            node = match.nodes_map.get(p)
            if p.op in ("placeholder", "output") or node is None:
                continue
            if not node.users:
                graph.erase_node(node)
    gm.recompile()
    return matches
