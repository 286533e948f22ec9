"""Hover text: the graph node(s) an expression produced, or a module's trace status."""

from __future__ import annotations

from fxls.pass_view import graph_label
from fxls.report import ModuleReport, NodeInfo, PassGraphRun, PassReport, TraceStatus

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


def nodes_markdown(hits: list[tuple[ModuleReport, NodeInfo]]) -> str:
    return "\n\n---\n\n".join(node_markdown(module, node) for module, node in hits)


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
