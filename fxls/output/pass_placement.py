"""Where a node an FX pass added sits in the module tree. torch.fx gives a node made by a
pass no module (``nn_module_stack`` is the tracer's), so without this it would be drawn at
the root, between the model's stages. It belongs where the node whose uses it took was
(``relu`` replaced by ``gelu``, ``neg`` put after ``relu``: that node's module); otherwise in
the module its inputs and users share (nodes added around another added node follow it).
"""

from __future__ import annotations

from dataclasses import replace

from fxls.report import NodeInfo

#: nodes that are in no module of their own
_OUTSIDE = ("placeholder", "output", "get_attr")


def place_added(nodes: list[NodeInfo], known: dict[str, NodeInfo],
                added: set[str]) -> list[NodeInfo]:
    """``nodes`` (the graph after the pass, its users as wired after it) with a module path
    for each added node that has none; ``known`` are the nodes of the graph before it."""
    users_before = {name: set(node.users) for name, node in known.items()}
    inputs: dict[str, list[str]] = {n.name: [] for n in nodes}
    for node in nodes:
        for user in node.users:
            if user in inputs:
                inputs[user].append(node.name)
    paths = {n.name: _module_of(n) for n in nodes
             if n.op not in _OUTSIDE and not _unplaced(n, added)}
    todo = [n for n in nodes if _unplaced(n, added)]
    for node in todo:
        if node.op == "call_module":  # a call of a module the pass added: that module's
            paths[node.name] = node.target
            continue
        took = [known[name] for name, used in users_before.items()
                if name != node.name and used & set(node.users)
                and known[name].op not in _OUTSIDE]
        path = _common_path([_module_of(n) for n in took])
        if path is not None:
            paths[node.name] = path
    for sweep in (todo, todo[::-1]):  # neighbours: from the inputs' side, then the users'
        for node in sweep:
            if node.name in paths:
                continue
            around = [paths[n] for n in [*inputs[node.name], *node.users] if n in paths]
            path = _common_path(around)
            if path is not None:
                paths[node.name] = path
    return [replace(n, module_path=paths[n.name]) if _unplaced(n, added) and paths.get(
        n.name) else n for n in nodes]


def _unplaced(node: NodeInfo, added: set[str]) -> bool:
    return node.name in added and not node.module_path and node.op not in (
        "placeholder", "output")


def _module_of(node: NodeInfo) -> str:
    """The module a node is drawn in: a module call in the module around the one it
    calls."""
    path = node.module_path or ""
    return path.rpartition(".")[0] if node.op == "call_module" else path


def _common_path(paths: list[str]) -> str | None:
    """The longest module path all ``paths`` are inside ("" for none in common)."""
    if not paths:
        return None
    parts = [p.split(".") if p else [] for p in paths]
    common: list[str] = []
    for column in zip(*parts, strict=False):
        if any(part != column[0] for part in column):
            break
        common.append(column[0])
    return ".".join(common)
