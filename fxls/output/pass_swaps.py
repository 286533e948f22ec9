"""A module an FX pass put in place of another, as the views say it: ``Conv2d+BatchNorm2d →
Conv2d`` on the call of a conv a fuser replaced by the conv with the BatchNorm folded in (the
BatchNorm's call, removed, is named with it), ``Conv2d → Conv2d (replaced)`` when nothing
was folded in, ``Linear → QLinear`` for another class."""

from __future__ import annotations

from dataclasses import dataclass

from fxls.report import NodeInfo, PassGraphRun


@dataclass(frozen=True, slots=True)
class ModuleSwap:
    #: the class of the module the pass put in (``torch.nn.modules.conv.Conv2d``)
    module_type: str
    #: ``Conv2d+BatchNorm2d → Conv2d``
    text: str


def module_swaps(run: PassGraphRun, before: list[NodeInfo]) -> dict[str, ModuleSwap]:
    """By the module path the graph calls: what the pass swapped there."""
    removed = set(run.removed)
    by_name = {n.name: n for n in before}
    calls = {n.target: n for n in before if n.op == "call_module"}
    swaps = {}
    for path, new_type in run.swapped.items():
        old = calls.get(path)
        folded = [by_name[u] for u in (old.users if old is not None else [])
                  if u in removed and by_name.get(u) and by_name[u].op == "call_module"]
        old_types = [_short(n.module_type) for n in ([old] if old is not None else []) + folded]
        was = "+".join(t for t in old_types if t) or "module"
        now = _short(new_type)
        same = not folded and was == now
        swaps[path] = ModuleSwap(new_type, f"{was} → {now}" + (" (replaced)" if same else ""))
    return swaps


def _short(module_type: str | None) -> str:
    return (module_type or "").rpartition(".")[2]
