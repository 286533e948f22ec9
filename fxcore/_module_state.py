"""Undo what a trace wrote into the traced modules.

A forward may assign to its module while tracing: torchvision's ``AnchorGenerator`` does
``self.cell_anchors = [a.to(dtype=..., device=...) for a in self.cell_anchors]``, which leaves
Proxies of that trace in the model. The recovering search traces the same instance many times:
a later trace would meet an earlier trace's Proxies, and traces made with the same stand-ins
would differ. ``snapshot`` keeps each module's attribute tables (its ``__dict__`` and the
parameter, buffer and submodule tables, shallow), ``restore`` puts them back before each trace
(a snapshot can be restored any number of times).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["restore", "snapshot"]

_TABLES = ("_parameters", "_buffers", "_modules")

State = list[tuple[torch.nn.Module, dict[str, Any], dict[str, dict[str, Any]]]]


def snapshot(root: Any) -> State:
    if not isinstance(root, torch.nn.Module):
        return []
    state: State = []
    seen: set[int] = set()
    pending = [root]
    while pending:  # ``modules()`` without the qualified names it builds along the way
        module = pending.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        attributes = module.__dict__
        tables = {name: dict(table) for name in _TABLES
                  if isinstance(table := attributes.get(name), dict)}
        state.append((module, dict(attributes), tables))
        children = attributes.get("_modules")
        if isinstance(children, dict):
            pending.extend(m for m in reversed(children.values()) if isinstance(m, torch.nn.Module))
    return state


def restore(state: State) -> None:
    for module, attributes, tables in state:
        current = module.__dict__
        for name in [n for n in current if n not in attributes]:
            del current[name]
        current.update(attributes)  # the table dicts themselves are the same objects again
        for name, table in tables.items():
            live = current[name]
            live.clear()
            live.update(table)
