"""Hover text: the graph node(s) an expression produced, or a module's trace status."""

from __future__ import annotations

from fxls.report import ModuleReport, NodeInfo, TraceStatus

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
    lines = [f"**{node.name}** · `{node.op}` · in `{module.name}`", ""]
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
