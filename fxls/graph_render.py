"""One traced module's graph as code, a table, Graphviz DOT or JSON (``fxls graph``)."""

from __future__ import annotations

import json
from dataclasses import asdict

from fxls.report import ModuleReport, NodeInfo

_DOT_STYLE = {
    "placeholder": 'shape=ellipse, style=filled, fillcolor="#e8f4fd"',
    "output": 'shape=ellipse, style=filled, fillcolor="#e8f5e9"',
    "get_attr": 'shape=box, style="rounded,filled", fillcolor="#fff3e0"',
    "call_module": 'shape=box, style="filled", fillcolor="#ede7f6"',
}


def _shape_text(node: NodeInfo) -> str:
    if node.shape is None:
        return ""
    dims = ", ".join(str(d) for d in node.shape)
    return f"{node.dtype or ''}[{dims}]".replace("torch.", "")


def render_table(module: ModuleReport) -> str:
    header = ("name", "op", "target", "args", "shape", "line")
    rows = [
        (
            n.name,
            n.op,
            n.target,
            n.args if not n.kwargs or n.kwargs == "{}" else f"{n.args} {n.kwargs}",
            _shape_text(n),
            str(n.span.line) if n.span else "",
        )
        for n in module.nodes
    ]
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = (str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)]) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_dot(module: ModuleReport) -> str:
    lines = [
        f'digraph "{_dot_escape(module.name)}" {{',
        "  rankdir=TB;",
        '  node [fontname="monospace", fontsize=10];',
    ]
    for node in module.nodes:
        label = f"{node.name}\\n{node.op}: {_dot_escape(node.target)}"
        shape = _shape_text(node)
        if shape:
            label += f"\\n{shape}"
        style = _DOT_STYLE.get(node.op, "shape=box")
        lines.append(f'  "{_dot_escape(node.name)}" [label="{label}", {style}];')
    for node in module.nodes:
        for user in node.users:
            lines.append(f'  "{_dot_escape(node.name)}" -> "{_dot_escape(user)}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_json(module: ModuleReport) -> str:
    document = {
        "name": module.name,
        "status": module.status,
        "nodes": [asdict(node) for node in module.nodes],
        "code": module.code,
    }
    return json.dumps(document, indent=2) + "\n"


def render_code(module: ModuleReport) -> str:
    return (module.code or "").strip("\n") + "\n"


RENDERERS = {"code": render_code, "table": render_table, "dot": render_dot, "json": render_json}


def render_module(module: ModuleReport, fmt: str) -> str:
    return RENDERERS[fmt](module)
