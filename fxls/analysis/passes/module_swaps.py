"""The modules a pass put in place of others: a fuser's ``setattr(parent, name, fused_conv)``
(torch's conv-bn fusion tutorial) leaves the graph's ``call_module`` node as it was, so only
the module tree shows the change.

A module at a path the graph after the pass calls was swapped when it is another object than
the one the pass found there and differs from it in class or in its own parameters and
buffers: a pass that copies the whole model first (``copy.deepcopy(model)``, as the tutorial
does) changes no module it did not replace.
"""

from __future__ import annotations

from typing import Any

import torch


def modules_by_path(root: Any) -> dict[str, torch.nn.Module]:
    """``root``'s modules by qualified name (none when it is not a module)."""
    if not isinstance(root, torch.nn.Module):
        return {}
    return dict(root.named_modules(remove_duplicate=False))


def swapped_modules(before: dict[str, torch.nn.Module], after_root: Any,
                    graph: Any) -> dict[str, str]:
    """The class (``torch.nn.modules.conv.Conv2d``) of each module the graph after the pass
    calls that replaced the one at its path in ``before``."""
    after = modules_by_path(after_root)
    called = {n.target for n in graph.nodes if n.op == "call_module"}
    swapped = {}
    for path in sorted(called):
        new, old = after.get(path), before.get(path)
        if new is None or old is None or new is old:
            continue
        if type(new) is not type(old) or not _same_values(old, new):
            cls = type(new)
            swapped[path] = f"{cls.__module__}.{cls.__qualname__}"
    return swapped


def _same_values(old: torch.nn.Module, new: torch.nn.Module) -> bool:
    """Whether the two modules hold equal parameters and buffers of their own."""
    mine = dict(old.state_dict(keep_vars=True))
    theirs = dict(new.state_dict(keep_vars=True))
    if mine.keys() != theirs.keys():
        return False
    with torch.no_grad():
        return all(_equal(mine[k], theirs[k]) for k in mine)


def _equal(left: Any, right: Any) -> bool:
    if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)):
        return left == right
    if left.shape != right.shape or left.dtype != right.dtype:
        return False
    if left.is_meta or right.is_meta:  # a model too big to build: sizes are all there is
        return True
    return bool(torch.equal(left, right))
