"""Calls of submodules (and helpers) that a traced graph went through: the expression
``self.block(x)`` made no node of its own, the nodes came from inside ``Block.forward``.
Each call, per module instance, with the nodes it produced and what crossed its boundary,
so hover and inlay hints work on those lines too.

A node's ``meta["source_stack"]`` holds the user frames from the traced root down to the
expression that created it; its ``meta["nn_module_stack"]`` the submodules whose
``forward`` was running. A frame belongs to the innermost module on that stack whose
``forward`` contains it (helper functions belong to their caller's module), so the module
a call site entered is the first module after its frame's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from fxcore.node import Node
from fxcore.source import SourceSpan


@dataclass
class _Call:
    span: SourceSpan
    path: str | None
    module_type: type | None
    nodes: list[Node] = field(default_factory=list)


def submodule_calls(nodes: Iterable[Node]) -> list[tuple[SourceSpan, str | None, str | None,
                                                          list[Node], list[Node], list[Node]]]:
    """(call span, submodule path, its class, the nodes the call produced, the nodes outside
    it that it reads, its nodes that are used outside it), in graph order. A call site run by
    several instances (a block's line, a loop over blocks) gives one entry per instance."""
    calls: dict[tuple[Any, ...], _Call] = {}
    ordered = list(nodes)
    for node in ordered:
        stack = node.meta.get("source_stack")
        if not stack or len(stack) < 2:
            continue
        chain = list((node.meta.get("nn_module_stack") or {}).values())
        owner = 0  # index into chain + 1; 0 is the traced root
        owners = [0]
        for frame in stack[1:]:
            owner = _owner(frame, chain, owner)
            owners.append(owner)
        for depth, site in enumerate(stack[:-1]):
            entered = owners[depth + 1] > owners[depth]
            path, cls = chain[owners[depth]] if entered else (None, None)
            # the instance running the site: a block's line runs once per block
            running = chain[owners[depth] - 1][0] if owners[depth] else ""
            key = (tuple(stack[: depth + 1]), running, path)
            call = calls.get(key)
            if call is None:
                call = calls[key] = _Call(site, path, cls)
            call.nodes.append(node)
    result = []
    for call in calls.values():
        inside = set(call.nodes)
        inputs: dict[Node, None] = {}
        for node in call.nodes:
            for arg in node.all_input_nodes:
                if arg not in inside:
                    inputs[arg] = None
        outputs = [n for n in call.nodes if any(u not in inside for u in n.users)]
        type_name = (f"{call.module_type.__module__}.{call.module_type.__qualname__}"
                     if isinstance(call.module_type, type) else None)
        result.append((call.span, call.path, type_name, call.nodes, list(inputs), outputs))
    return result


def _owner(frame: SourceSpan, chain: list[tuple[str, Any]], previous: int) -> int:
    """The 1-based index in ``chain`` of the module whose ``forward`` runs ``frame``: the
    first after ``previous`` that contains it; ``previous`` when none does (a helper)."""
    for index in range(previous, len(chain)):
        if _contains(chain[index][1], frame):
            return index + 1
    return previous


def _contains(cls: Any, frame: SourceSpan) -> bool:
    lines = _forward_lines(cls)
    return lines is not None and lines[0] == frame.file and lines[1] <= frame.line <= lines[2]


@cache
def _forward_lines(cls: Any) -> tuple[str, int, int] | None:
    forward = getattr(cls, "forward", None)
    code = getattr(forward, "__code__", None)
    if code is None:
        return None
    numbers = [line for _, _, line in code.co_lines() if line is not None]
    if not numbers:
        return None
    return code.co_filename, code.co_firstlineno, max(numbers)
