"""Hover text: the graph node(s) an expression produced, or a module's trace status."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from urllib.parse import quote

from fxls.graph_view.pass_view import graph_label
from fxls.report import (
    CallInfo,
    FileReport,
    ModuleReport,
    NodeInfo,
    PassGraphRun,
    PassReport,
    TraceStatus,
)
from fxls.server.report_lookup import (
    breaks_on_line,
    export_nodes_at,
    innermost_at,
    module_at,
    pass_at,
    pass_nodes_at,
)
from fxls.server.target_hover import breaks_markdown, export_markdown

_OP_LABEL = {
    "placeholder": "placeholder (a forward input)",
    "get_attr": "get_attr (a parameter, buffer or attribute)",
    "call_function": "call_function",
    "call_method": "call_method",
    "call_module": "call_module",
    "output": "output",
}


def _shape(node: NodeInfo) -> str | None:
    if node.shape is None:
        return None
    dtype = (node.dtype or "").replace("torch.", "")
    return f"`{dtype}[{', '.join(str(d) for d in node.shape)}]`"


def node_markdown(module: ModuleReport, node: NodeInfo) -> str:
    return _node_markdown(node, f"in `{module.name}`")


def _node_markdown(node: NodeInfo, where: str) -> str:
    lines = [f"**{node.name}** · `{node.op}` · {where}", ""]
    rows: list[tuple[str, str]] = [("opcode", _OP_LABEL.get(node.op, node.op))]
    rows.append(("target", f"`{node.target}`"))
    if node.op == "call_module" and node.module_type:
        detail = f"`{node.module_type}`"
        if node.module_params is not None:
            detail += f", {node.module_params:,} parameters"
        rows.append(("module", detail))
    if node.named_args:
        rows.append(("args", ", ".join(f"`{name}={value}`" for name, value in node.named_args)))
    else:
        if node.args and node.args != "()":
            rows.append(("args", f"`{node.args}`"))
        if node.kwargs and node.kwargs != "{}":
            rows.append(("kwargs", f"`{node.kwargs}`"))
    rows.append(("users", ", ".join(f"`{u}`" for u in node.users) if node.users else "none"))
    shape = _shape(node)
    if shape:
        rows.append(("shape", shape))
    if node.backward:
        rows.append(("backward", f"`{node.backward}`"))
    lines.extend(f"- {key}: {value}" for key, value in rows)
    return "\n".join(lines)


#: more hits than this on one expression (a block's line run by many instances) are
#: summarised instead of shown one section each
_SECTIONS_SHOWN = 3


def nodes_markdown(hits: list[tuple[ModuleReport, NodeInfo]]) -> str:
    """A section per node; a module whose graph has many nodes from this expression (a
    block's line run by every instance) gets one summary instead."""
    by_module: dict[str, list[tuple[ModuleReport, NodeInfo]]] = {}
    for module, node in hits:
        by_module.setdefault(module.name, []).append((module, node))
    sections = []
    for group in by_module.values():
        if len(group) <= _SECTIONS_SHOWN:
            sections.extend(node_markdown(module, node) for module, node in group)
            continue
        module, first = group[0]
        lines = [node_markdown(module, first), "",
                 f"This expression ran {len(group)} times in `{module.name}` (one node per "
                 "instance):",
                 f"- instances: {_instances([n.module_path or n.name for _, n in group])}"]
        shapes = _shape_counts(node for _, node in group)
        if shapes:
            lines.append(f"- shapes: {shapes}")
        sections.append("\n".join(lines))
    return "\n\n---\n\n".join(sections)


def calls_markdown(hits: list[tuple[ModuleReport, CallInfo]], uri: str) -> str:
    """A call that made no node of its own: the submodule (or helper) it ran, the nodes it
    produced, what went in and came out; one summary for a line run by many instances."""
    blocks = []
    by_module: dict[str, list[tuple[ModuleReport, CallInfo]]] = {}
    for module, call in hits:
        by_module.setdefault(module.name, []).append((module, call))
    for group in by_module.values():
        module = group[0][0]
        nodes = {n.name: n for n in module.nodes}
        calls = [call for _, call in group]
        first = calls[0]
        kind = (f"submodule `{first.path.rsplit('.', 1)[-1]}`" if first.path
                else "a function call")
        heading = f"**{kind}**"
        if first.module_type:
            heading += f" · `{first.module_type}`"
        heading += f" · in `{module.name}`"
        lines = [heading, ""]
        if len(calls) == 1:
            if first.path:
                lines.append(f"- module: `{first.path}`")
            lines.append(f"- nodes: {_op_counts(first.nodes, nodes)}")
            lines.append(f"- inputs: {_endpoints(first.inputs, nodes)}")
            lines.append(f"- outputs: {_endpoints(first.outputs, nodes)}")
        else:
            lines.append(f"- instances: {len(calls)} "
                         f"({_instances([c.path or '' for c in calls if c.path])})")
            sizes = Counter(len(c.nodes) for c in calls)
            lines.append("- nodes: " + (", ".join(
                f"{size} x{count}" for size, count in sizes.most_common())
                if len(sizes) > 1 else str(len(first.nodes))) + " per instance")
            lines.append(f"- shapes: {_flow_counts(calls, nodes)}")
        args = quote(json.dumps([uri, module.name]))
        lines.append(f"\n[Show the graph of `{module.name}`](command:fxls.showGraph?{args})")
        blocks.append("\n".join(lines))
    return "\n\n---\n\n".join(blocks)


def _op_counts(names: list[str], nodes: dict[str, NodeInfo]) -> str:
    ops = Counter(nodes[n].op for n in names if n in nodes)
    detail = ", ".join(f"{op} {count}" for op, count in ops.most_common())
    return f"{len(names)} ({detail})" if detail else str(len(names))


def _endpoints(names: list[str], nodes: dict[str, NodeInfo], limit: int = 4) -> str:
    if not names:
        return "none"
    shown = []
    for name in names[:limit]:
        node = nodes.get(name)
        shape = _shape(node) if node is not None else None
        shown.append(f"`{name}` {shape}" if shape else f"`{name}`")
    more = f", and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(shown) + more


def _instances(paths: list[str], limit: int = 3) -> str:
    if not paths:
        return "none named"
    if len(paths) <= limit:
        return ", ".join(f"`{p}`" for p in paths)
    return f"`{paths[0]}`, `{paths[1]}`, … `{paths[-1]}`"


def _shape_counts(nodes: Iterable[NodeInfo]) -> str:
    counts = Counter(s for s in (_shape(n) for n in nodes) if s)
    return ", ".join(f"{shape} x{count}" for shape, count in counts.most_common(4))


def _flow_counts(calls: list[CallInfo], nodes: dict[str, NodeInfo]) -> str:
    """``float32[1, 197, 384] → float32[1, 197, 384] x12``: each distinct in -> out."""
    def shapes(names: list[str]) -> str:
        found = [_shape(nodes[n]) for n in names if n in nodes]
        return ", ".join(s for s in found if s) or "?"

    counts = Counter(f"{shapes(c.inputs)} → {shapes(c.outputs)}" for c in calls)
    return "; ".join(f"{flow} x{count}" for flow, count in counts.most_common(4))


#: what a status means, where the verdict alone does not say it
_STATUS_NOTE = {
    TraceStatus.PARTIAL: "The graph is partial: tracing recovered from the problems reported in "
    "`forward`.",
}


def module_markdown(module: ModuleReport) -> str:
    """``**Net** — traced via ResNet (resnet18()) · 12 nodes``, then the generated code."""
    text = f"**{module.name}** — {module.verdict()}"
    if module.node_count:
        text += f" · {module.node_count} nodes"
    note = _STATUS_NOTE.get(module.status)
    if note:
        text += f"\n\n{note}"
    if module.code:
        text += f"\n\n```python\n{module.code.strip()}\n```"
    return text


#: how many nodes a hover on a pass line describes (a pass run on many graphs)
_PASS_NODES_SHOWN = 6


def pass_nodes_markdown(hits: list[tuple[PassReport, PassGraphRun, NodeInfo]]) -> str:
    """The nodes a pass line created or changed: one block per graph the pass ran on."""
    blocks = [
        _node_markdown(node, f"in the graph of `{graph_label(run)}` (after `{report.name}`)")
        for report, run, node in hits[:_PASS_NODES_SHOWN]
    ]
    if len(hits) > _PASS_NODES_SHOWN:
        blocks.append(f"and {len(hits) - _PASS_NODES_SHOWN} more")
    return "\n\n---\n\n".join(blocks)


def pass_markdown(report: PassReport) -> str:
    """On a pass's name: what it did to each graph it ran on."""
    text = f"**{report.name}** — FX pass (`{report.kind}`)"
    if report.graphs_from == "representative":
        text += "\n\nThe file has no model to run it on: it ran on representative graphs."
    elif report.graphs_from == "pass_models":
        text += "\n\nIt ran on the project's `pass_models`."
    if not report.runs:
        return text + "\n\nNot run: no graph to run it on."
    rows = []
    for run in report.runs:
        if run.problem is not None:
            rows.append(f"- `{graph_label(run)}`: {run.problem}")
            continue
        detail = [f"+{len(run.added)} -{len(run.removed)}"]
        for label, names in (("added", run.added), ("removed", run.removed),
                             ("rewired", run.rewired)):
            if names:
                detail.append(f"{label} {', '.join(f'`{n}`' for n in names)}")
        if len(detail) == 1 and detail[0] == "+0 -0":
            detail = ["no change"]
        rows.append(f"- `{graph_label(run)}`: {'; '.join(detail)}")
    return f"{text}\n\n" + "\n".join(rows)


def hover_text(report: FileReport, path: str, line: int, col: int, uri: str) -> str | None:
    """Markdown for (line, col): the nodes its expression made in the models' graphs (or,
    for a call of a submodule traced through, what that call produced), the nodes a pass
    line made or changed in the graphs the pass ran on, the ATen nodes it made in the
    exported programs and the graph breaks dynamo made on its line; else the module or pass
    whose name is there."""
    blocks = []
    hits, calls = innermost_at(report, path, line, col)
    if hits:
        blocks.append(nodes_markdown(hits))
    if calls:
        blocks.append(calls_markdown(calls, uri))
    pass_hits = pass_nodes_at(report, path, line, col)
    if pass_hits:
        blocks.append(pass_nodes_markdown(pass_hits))
    exported = export_nodes_at(report, path, line, col)
    if exported:
        blocks.append(export_markdown(exported))
    breaks = breaks_on_line(report, path, line)
    if breaks:
        blocks.append(breaks_markdown(breaks))
    if blocks:
        return "\n\n---\n\n".join(blocks)
    module = module_at(report, line, col)
    if module is not None:
        return module_markdown(module)
    found = pass_at(report, line, col)
    return pass_markdown(found) if found is not None else None
