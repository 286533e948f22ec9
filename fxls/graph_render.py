"""One traced module's graph as code, a table, Graphviz DOT, JSON or a self-contained HTML
page (``fxls graph``)."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
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


#: the columns of a node table (text and HTML)
TABLE_HEADER = ("name", "op", "target", "args", "shape", "line")


def node_cells(node: NodeInfo, line: str | None = None) -> tuple[str, ...]:
    """A node's row of :data:`TABLE_HEADER` (``line`` replaces its source line)."""
    args = node.args if not node.kwargs or node.kwargs == "{}" else f"{node.args} {node.kwargs}"
    if line is None:
        line = str(node.span.line) if node.span else ""
    return (node.name, node.op, node.target, args, _shape_text(node), line)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell, a rule under the header (none under a column
    without a name)."""
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = (str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        return "  ".join(cells).rstrip()

    rule = "  ".join(("-" if h else " ") * w for h, w in zip(header, widths, strict=True))
    return "\n".join([line(header), rule.rstrip(), *(line(r) for r in rows)]) + "\n"


def render_table(module: ModuleReport) -> str:
    return format_table(TABLE_HEADER, [node_cells(n) for n in module.nodes])


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


_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
table { border-collapse: collapse; font: 12px monospace; margin: .5em 0; }
th, td { text-align: left; padding: 2px 10px; border-bottom: 1px solid #eee; }
th { background: #f5f5f5; } tr.added { background: #e6ffec; } tr.rewired { background: #fff8c5; }
tr.removed { background: #ffebe9; text-decoration: line-through; }
pre { background: #f6f8fa; padding: .8em; overflow: auto; font-size: 12px; }
pre span { display: block; } pre .add { background: #e6ffec; } pre .del { background: #ffebe9; }
details { margin: .3em 0; } summary { cursor: pointer; font-family: monospace; }
.muted { color: #777; } .problem { color: #b00020; }
"""


def html_page(title: str, body: list[str]) -> str:
    """A self-contained page (inline style, no script, no network)."""
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>",
        *body, "</body>", "</html>",
    ]) + "\n"


def html_table(header: Sequence[str], rows: Sequence[tuple[Sequence[str], str]]) -> str:
    """A table; each row is its cells and a CSS class (``""`` for none)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for cells, css in rows:
        tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        body.append(f'<tr class="{css}">{tds}</tr>' if css else f"<tr>{tds}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def render_html(module: ModuleReport) -> str:
    """The graph's nodes grouped by module path (the root's own nodes first), then the
    generated code."""
    groups: dict[str, list[NodeInfo]] = {}
    for node in module.nodes:
        groups.setdefault(node.module_path or "", []).append(node)
    body = [f"<h1>{html.escape(module.name)}</h1>",
            f'<p class="muted">{html.escape(module.verdict())}, '
            f"{len(module.nodes)} nodes</p>", "<h2>Nodes by module</h2>"]
    for path, nodes in groups.items():
        kind = next((n.module_type for n in nodes if n.module_type), None)
        label = path or "(the module itself)"
        if kind:
            label += f" : {kind}"
        table = html_table(TABLE_HEADER, [(node_cells(n), "") for n in nodes])
        body.append(f"<details open><summary>{html.escape(label)} "
                    f"({len(nodes)})</summary>{table}</details>")
    if module.code:
        body += ["<h2>Code</h2>", f"<pre>{html.escape(module.code.strip())}</pre>"]
    return html_page(f"{module.name}: FX graph", body)


RENDERERS = {"code": render_code, "table": render_table, "dot": render_dot, "json": render_json,
             "html": render_html}


def render_module(module: ModuleReport, fmt: str) -> str:
    return RENDERERS[fmt](module)
