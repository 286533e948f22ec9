"""replace_pattern: find every occurrence of a pattern graph and splice in a replacement.

Matching follows torch.fx: the pattern's returned values are matched backwards through
their arguments; pattern placeholders are wildcards (for nodes and, when ``match_literals``,
for constants too); a match is kept only if its inner values are not used outside it, if
fusing it would not create a cycle, and if it does not overlap an earlier match.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from fxcore._symbolic_trace import symbolic_trace
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Node

__all__ = ["Match", "replace_pattern", "find_matches"]


class Match(NamedTuple):
    #: find_matches: the graph node matched to the pattern's (first) returned value;
    #: replace_pattern: that pattern node itself, as torch.fx reports it
    anchor: Node
    nodes_map: dict[Node, Any]  # pattern node -> matched node (or constant, for placeholders)


@dataclass
class _Candidate:
    nodes_map: dict[Node, Any] = field(default_factory=dict)

    def copy(self) -> _Candidate:
        return _Candidate(dict(self.nodes_map))


def _as_graph(pattern: Callable[..., Any] | Graph | GraphModule) -> Graph:
    if isinstance(pattern, GraphModule):
        return pattern.graph
    if isinstance(pattern, Graph):
        return pattern
    return symbolic_trace(pattern).graph


def _fetch(module: Any, target: str) -> Any:
    value = module
    for atom in target.split("."):
        value = getattr(value, atom)
    return value


class _Matcher:
    def __init__(self, pattern: Graph, *, match_literals: bool) -> None:
        if len(pattern.nodes) == 0:
            raise ValueError("cannot match an empty pattern")
        self.pattern = pattern
        self.match_literals = match_literals
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        output = pattern.output_node()
        self.returning = output.all_input_nodes
        self.anchors = [n for n in self.returning if len(n.users) == 1]

    # -- one node ------------------------------------------------------------------------
    def _same_kind(self, p: Node, n: Node) -> bool:
        if p.op == "placeholder":
            return True
        if p.op != n.op:
            return False
        if p.op == "output":
            return True
        if p.op == "get_attr":
            return self._same_attribute(p, n)
        return p.target == n.target

    def _same_attribute(self, p: Node, n: Node) -> bool:
        p_owner, n_owner = p.graph.owning_module, n.graph.owning_module
        if p_owner is None or n_owner is None:
            return True  # nothing to compare: match by position, like a placeholder
        p_value, n_value = _fetch(p_owner, str(p.target)), _fetch(n_owner, str(n.target))
        if type(p_value) is not type(n_value):
            return False
        if isinstance(p_value, torch.Tensor):
            return True
        raise RuntimeError(f"Unsupported type {p_value} when matching attributes")

    def _match_node(self, p: Node, n: Node, c: _Candidate) -> bool:
        if p in c.nodes_map:
            return c.nodes_map[p] is n
        if any(bound is n for bound in c.nodes_map.values()):
            return False
        if not self._same_kind(p, n):
            return False
        c.nodes_map[p] = n
        if p.op == "placeholder":
            return True
        operands = self._operands(p, n)
        return operands is not None and self._match_args(*operands, c)

    @staticmethod
    def _operands(p: Node, n: Node) -> tuple[list[Any], list[Any]] | None:
        same_shape = len(p.args) == len(n.args) and list(p.kwargs) == list(n.kwargs)
        if (
            not same_shape
            and p.op == "call_function"
            and isinstance(p.target, torch._ops.OpOverload)
        ):
            # spell both calls out in full, by the schema, so that defaults compare
            schema_args = p.target._schema.arguments

            def spelled_out(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
                values = []
                for i, argument in enumerate(schema_args):
                    if argument.name in kwargs:
                        values.append(kwargs[argument.name])
                    elif not argument.kwarg_only and i < len(args):
                        values.append(args[i])
                    else:
                        values.append(argument.default_value)
                return values

            return spelled_out(p.args, p.kwargs), spelled_out(n.args, n.kwargs)
        if not same_shape:
            return None
        return [*p.args, *p.kwargs.values()], [*n.args, *n.kwargs.values()]

    def _match_args(self, ps: Any, ns: Any, c: _Candidate) -> bool:
        if len(ps) != len(ns):
            return False
        for p, n in zip(ps, ns, strict=True):
            if isinstance(p, Node) and isinstance(n, Node):
                ok = self._match_node(p, n, c)
            elif isinstance(p, list | tuple) and isinstance(n, list | tuple):
                ok = self._match_args(p, n, c)
            else:
                ok = self._match_literal(p, n, c)
            if not ok:
                return False
        return True

    def _match_literal(self, p: Any, n: Any, c: _Candidate) -> bool:
        if isinstance(p, Node):
            if p.op != "placeholder" or not self.match_literals:
                return False
            if p in c.nodes_map:
                return bool(c.nodes_map[p] == n)
            c.nodes_map[p] = n
            return True
        if isinstance(n, Node):
            return False
        return type(p) is type(n) and bool(p == n)

    # -- the whole graph -------------------------------------------------------------------
    def _contained(self, c: _Candidate) -> bool:
        inner = {n: p for p, n in c.nodes_map.items() if p.op != "placeholder"}
        return all(
            user in inner for n, p in inner.items() if p not in self.returning for user in n.users
        )

    @staticmethod
    def _acyclic(c: _Candidate) -> bool:
        """Fusing the matched nodes must not create a cycle (a path out and back in)."""
        inner = {n for p, n in c.nodes_map.items() if p.op not in ("placeholder", "output")}
        frontier = [u for n in inner for u in n.users if u not in inner]
        seen: set[Node] = set()
        while frontier:
            node = frontier.pop()
            if node in seen:
                continue
            seen.add(node)
            for user in node.users:
                if user in inner:
                    return False
                frontier.append(user)
        return True

    def matches(self, graph: Graph) -> list[_Candidate]:
        candidates = [
            [n for n in graph.nodes if self._same_kind(anchor, n)] for anchor in self.anchors
        ]
        found: list[_Candidate] = []

        def extend(index: int, c: _Candidate) -> Iterator[_Candidate]:
            if index == len(self.anchors):
                yield c
                return
            for node in candidates[index]:
                attempt = c.copy()
                if self._match_node(self.anchors[index], node, attempt):
                    yield from extend(index + 1, attempt)

        if self.anchors:
            found = [c for c in extend(0, _Candidate()) if self._contained(c)]
        found = [c for c in found if self._acyclic(c)]
        kept: list[_Candidate] = []
        used: set[Node] = set()
        for c in found:
            inner = [n for p, n in c.nodes_map.items() if p.op not in ("placeholder", "output")]
            if any(n in used for n in inner):
                continue
            kept.append(c)
            used.update(inner)
        return kept


def find_matches(
    graph: Graph, pattern_graph: Graph, *, match_literals: bool = False
) -> list[Match]:
    """Non-overlapping occurrences of ``pattern_graph`` in ``graph``, in graph order.

    Pattern placeholders match nodes only, unless ``match_literals`` (then constants too).
    """
    matcher = _Matcher(pattern_graph, match_literals=match_literals)
    return [Match(c.nodes_map[matcher.anchors[0]], c.nodes_map) for c in matcher.matches(graph)]


def replace_pattern(
    gm: GraphModule,
    pattern: Callable[..., Any] | Graph | GraphModule,
    replacement: Callable[..., Any] | Graph | GraphModule,
) -> list[Match]:
    """Replace every non-overlapping match of ``pattern`` in ``gm`` by ``replacement``."""
    pattern_graph = _as_graph(pattern)
    replacement_graph = _as_graph(replacement)
    graph = gm.graph
    matcher = _Matcher(pattern_graph, match_literals=True)
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    replaced_by: dict[Node, Node] = {}  # a returned node of an earlier match -> its stand-in
    results = []
    for c in matcher.matches(graph):
        for p in matcher.placeholders:  # inputs may be the results of earlier replacements
            bound = c.nodes_map[p]
            if isinstance(bound, Node) and bound in replaced_by:
                c.nodes_map[p] = replaced_by[bound]
        inputs = [c.nodes_map[p] for p in matcher.placeholders]
        if len(inputs) != len(replacement_placeholders):
            raise ValueError(
                f"the pattern has {len(inputs)} inputs but the replacement has "
                f"{len(replacement_placeholders)}"
            )
        returning = [c.nodes_map[p] for p in matcher.returning]
        val_map: dict[Node, Any] = dict(zip(replacement_placeholders, inputs, strict=True))
        with graph.inserting_before(_insert_point(graph, returning)):
            new_values = graph.graph_copy(replacement_graph, val_map)
        if isinstance(new_values, Node):
            new_values = (new_values,)
        if len(new_values) != len(returning):
            raise ValueError(
                f"the pattern returns {len(returning)} values but the replacement "
                f"returns {len(new_values)}"
            )
        for old, new in zip(returning, new_values, strict=True):
            old.replace_all_uses_with(new)
            replaced_by[old] = new
        for p in reversed(list(pattern_graph.nodes)):
            if p.op not in ("placeholder", "output"):
                graph.erase_node(c.nodes_map[p])
        results.append(Match(matcher.anchors[0], c.nodes_map))
    gm.recompile()
    if isinstance(replacement, torch.nn.Module):
        _copy_attributes(gm, replacement)
    return results


def _insert_point(graph: Graph, returning: list[Node]) -> Node:
    """Before the first user of the matched results, or right after the last of them."""
    users = {u for n in returning for u in n.users}
    if users:
        return next(n for n in graph.nodes if n in users)
    following = None
    for node in reversed(graph.nodes):
        if node in returning:
            break
        following = node
    if following is None:
        raise AssertionError("The insert point can't be None")
    return following


def _copy_attributes(gm: GraphModule, replacement: torch.nn.Module) -> None:
    """Give ``gm`` the submodules and attributes that the replacement's nodes refer to."""
    gm.delete_all_unused_submodules()
    for node in gm.graph.nodes:
        if node.op not in ("call_module", "get_attr"):
            continue
        if _lookup(gm, node.target) is not None:
            continue
        value = _lookup(replacement, node.target)
        if value is None:
            raise RuntimeError(
                f"a {node.op} node with target {node.target} came from the replacement, "
                "but the replacement GraphModule has no such attribute"
            )
        value = copy.deepcopy(value)
        if isinstance(value, torch.nn.Module):
            gm.add_submodule(node.target, value)
        else:
            setattr(gm, node.target, value)
    gm.graph.lint()


def _lookup(module: torch.nn.Module, target: str) -> Any:
    path, _, name = target.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError:
        return None
    return getattr(owner, name, None)
