"""Hover text for what the export and compile tiers made of a line: the ATen nodes of the
exported program an expression produced, and the graph breaks dynamo made on it."""

from __future__ import annotations

from collections import Counter

from fxls.report import BreakInfo, ModuleReport, NodeInfo

#: the multiplication sign between sizes (``s0`` times ``768``)
_TIMES = "\u00d7"


def sizes_text(node: NodeInfo) -> str | None:
    """A node's sizes (symbolic ones as their symbols: ``s0`` times ``768``) and dtype."""
    if node.shape is None:
        return None
    sizes = _TIMES.join(str(size) for size in node.shape) or "scalar"
    return f"`{sizes}` {node.dtype or ''}".rstrip()


#: ATen nodes of one expression listed in a hover (a block's line run by every instance)
_ATEN_SHOWN = 8


def export_markdown(hits: list[tuple[ModuleReport, NodeInfo]]) -> str:
    """The ATen nodes an expression produced in each module's exported program."""
    blocks = []
    by_module: dict[str, list[tuple[ModuleReport, NodeInfo]]] = {}
    for module, node in hits:
        by_module.setdefault(module.name, []).append((module, node))
    for group in by_module.values():
        module = group[0][0]
        graph = module.target_graphs.export if module.target_graphs is not None else None
        which = "draft_export's program (export failed)" if graph is not None and \
            graph.drafted else "the exported program"
        count = f"{len(group)} ATen node{'s' if len(group) != 1 else ''}"
        lines = [f"**export** · {count} in {which} of `{module.name}`", ""]
        for _, node in group[:_ATEN_SHOWN]:
            sizes = sizes_text(node)
            arguments = node.args[:-2] + ")" if node.args.endswith(",)") else node.args
            lines.append(f"- `{node.name} = {node.target}{arguments}`"
                         + (f" · {sizes}" if sizes else ""))
        if len(group) > _ATEN_SHOWN:
            rest = Counter(node.target for _, node in group[_ATEN_SHOWN:])
            ops = ", ".join(f"`{target}` x{count}" for target, count in rest.most_common(4))
            lines.append(f"- and {len(group) - _ATEN_SHOWN} more: {ops}"
                         + (", …" if len(rest) > 4 else ""))
        blocks.append("\n".join(lines))
    return "\n\n---\n\n".join(blocks)


def breaks_markdown(hits: list[tuple[ModuleReport, int, BreakInfo]]) -> str:
    """Each graph break dynamo made on a line: between which subgraphs, and why."""
    lines = []
    for module, index, graph_break in hits:
        total = len(module.target_graphs.compile) if module.target_graphs is not None else 0
        lines.append(f"**graph break** · compile · `{module.name}`: subgraph {index + 1} of "
                     f"{total} ends here, dynamo resumes in subgraph {index + 2}: "
                     f"{graph_break.reason}")
    return "\n\n".join(lines)
