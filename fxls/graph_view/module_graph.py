"""One traced module's graph as code, a table, Graphviz DOT, JSON or a self-contained HTML
page with the interactive graph view (``fxls graph``)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from fxls.graph_view.problem_nodes import Landing, landing
from fxls.graph_view.problem_nodes import spans_overlap as spans_overlap
from fxls.graph_view.source_lines import Place, SourceFiles, notebook_cells, source_lines
from fxls.report import Diagnostic, FileReport, ModuleReport, NodeInfo, Span

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


#: the columns of a module's node table: the source as ``file:line``
MODULE_TABLE_HEADER = (*TABLE_HEADER[:-1], "location")


def location_text(span: Span | None, base: str | None, files: SourceFiles | None = None
                  ) -> str:
    """``file:line`` of a span (``file:cell 4:2`` in a notebook, given ``files``): the file
    relative to ``base`` (the module's folder) when it is inside it, else its absolute path;
    ``""`` without a span."""
    if span is None:
        return ""
    path = span.file
    if base and os.path.isabs(path):
        relative = os.path.relpath(path, base)
        if not relative.startswith(".."):
            path = relative
    line = files.label(span.file, span.line) if files is not None else str(span.line)
    return f"{path}:{line}"


def module_folder(module: ModuleReport) -> str | None:
    """The folder of the file a module is defined in (what table locations are relative to)."""
    return os.path.dirname(module.span.file) if module.span is not None else None


def render_table(module: ModuleReport, report: FileReport | None = None) -> str:
    base, files = module_folder(module), SourceFiles()
    rows = [node_cells(n, location_text(n.span, base, files)) for n in module.nodes]
    return format_table(MODULE_TABLE_HEADER, rows)


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_dot(module: ModuleReport, report: FileReport | None = None) -> str:
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


def module_problems(module: ModuleReport, report: FileReport | None,
                    files: SourceFiles | None = None) -> list[dict[str, Any]]:
    """The report's diagnostics about ``module``, each where it lands on the graph
    (:mod:`fxls.graph_view.problem_nodes`): ``nodes`` (those whose source expression
    overlaps the diagnostic's range, for a partial graph the nodes where tracing went wrong;
    else those made at its lines in the user's file), or ``group`` (the module its line
    calls), and ``attached`` saying which (``"own"``, ``"line"``, ``"group"``, null)."""
    if report is None:
        return []
    files = files if files is not None else SourceFiles()
    groups = group_paths(module.nodes)
    user_files = [module.span.file] if module.span is not None else []
    return [_problem(d, landing(d, module.nodes, groups, user_files, files))
            for d in report.diagnostics if d.module == module.name]


def _problem(diagnostic: Diagnostic, landed: Landing) -> dict[str, Any]:
    return {"code": diagnostic.code, "severity": str(diagnostic.severity),
            "message": diagnostic.message, "span": diagnostic.span.to_dict(),
            "nodes": landed.nodes, "group": landed.group, "attached": landed.attached}


def group_paths(nodes: Sequence[NodeInfo]) -> set[str]:
    """Every module path of ``nodes`` and its prefixes: the graph's groups."""
    paths: set[str] = set()
    for path in {node.module_path for node in nodes if node.module_path}:
        parts = path.split(".")
        paths.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return paths


def document_sources(nodes: Sequence[NodeInfo], problems: Sequence[dict[str, Any]],
                     files: SourceFiles) -> dict[str, dict[str, str]]:
    """The document's ``sources``: the lines around each node's line and each problem's."""
    places: list[Place] = [(n.span.file, n.span.line, n.span.line)
                           for n in nodes if n.span is not None]
    places += [(p["span"]["file"], p["span"]["line"], p["span"]["end_line"])
               for p in problems if p.get("span")]
    return source_lines(files, places)


def module_groups(module: ModuleReport) -> list[dict[str, Any]]:
    """Every module path of the graph's nodes and their prefixes, with how many nodes each
    holds at any depth, its class and where that is defined."""
    counts: dict[str, int] = {}
    types: dict[str, str] = {}
    for node in module.nodes:
        if not node.module_path:
            continue
        parts = node.module_path.split(".")
        for i in range(1, len(parts) + 1):
            path = ".".join(parts[:i])
            counts[path] = counts.get(path, 0) + 1
        if node.module_type and node.op == "call_module":
            types.setdefault(node.module_path, node.module_type)
    for path, module_type in module.module_types.items():  # submodules traced through
        types.setdefault(path, module_type)
    return [{"path": path, "parent": path.rpartition(".")[0], "type": types.get(path),
             "nodes": count, "defined": _defined(module, types.get(path))}
            for path, count in counts.items()]


def _defined(module: ModuleReport, module_type: str | None) -> dict[str, Any] | None:
    """Where the group's class is defined (``{"file", "line"}``), when known."""
    place = module.class_places.get(module_type) if module_type else None
    return {"file": place.file, "line": place.line} if place is not None else None


def graph_document(module: ModuleReport, report: FileReport | None = None,
                   problems: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The graph as plain data, what the graph page draws and ``--format json`` prints:
    each node with its module path (``module_path``, "" or null at the root) and the
    ``file`` and ``line`` that created it, the module groups, the module's problems where
    they land (``problems`` in place of the report's, when given), and ``sources``: the
    source lines around each node and problem. A notebook's lines are named by cell as
    ``fxls check`` names them: a node's ``where`` (``cell 4:2``), the problems' messages,
    and ``cells`` (:func:`~fxls.graph_view.source_lines.notebook_cells`) for the page; spans
    keep counting lines of the notebook's joined code (VS Code maps those itself)."""
    files = SourceFiles()
    if problems is None:
        problems = module_problems(module, report, files)
    problems = [_in_cells(problem, files) for problem in problems]
    nodes = []
    for node in module.nodes:
        entry = node.to_dict()
        entry["file"] = node.span.file if node.span is not None else None
        entry["line"] = node.span.line if node.span is not None else None
        if node.span is not None and files.cells(node.span.file) is not None:
            entry["where"] = files.label(node.span.file, node.span.line)
        nodes.append(entry)
    named = [n.span.file for n in module.nodes if n.span is not None]
    named += [p["span"]["file"] for p in problems if p.get("span")]
    if module.span is not None:
        named.insert(0, module.span.file)
    return {
        "version": 1,
        "name": module.name,
        "status": str(module.status),
        "verdict": module.verdict(),
        "file": module.span.file if module.span is not None else None,
        "nodes": nodes,
        "groups": module_groups(module),
        "problems": problems,
        "sources": document_sources(module.nodes, problems, files),
        "cells": notebook_cells(files, named),
        "code": module.code,
    }


def _in_cells(problem: dict[str, Any], files: SourceFiles) -> dict[str, Any]:
    """``problem`` in a notebook with its ``where`` (``cell 4:2``) and the lines its message
    names (``(line 25)``, ``model.ipynb:25``) named in their cells."""
    span = problem.get("span")
    cells = files.cells(span["file"]) if span else None
    if cells is None:
        return problem
    message = cells.relabel(problem["message"], os.path.basename(span["file"]))
    return {**problem, "message": message, "where": cells.label(span["line"])}


def render_json(module: ModuleReport, report: FileReport | None = None) -> str:
    return json.dumps(graph_document(module, report), indent=2) + "\n"


def render_code(module: ModuleReport, report: FileReport | None = None) -> str:
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


def json_for_script(value: Any) -> str:
    """JSON that cannot end the ``<script>`` element it sits in."""
    text = json.dumps(value, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def render_html(module: ModuleReport, report: FileReport | None = None) -> str:
    """One self-contained page: the interactive graph view (nodes grouped by module path,
    collapsible, zoom, search, a panel with each node's source file:line), its script and
    layout library inline."""
    return graph_page(graph_document(module, report))


#: node fields the page does not show (``--format json`` keeps them)
_NOT_ON_PAGE = ("named_args", "backward", "module_params", "file", "line", "where")


def _page_document(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` without what the page does not use: a smaller page opens faster."""
    if document.get("kind") == "pass":  # a pass's before/after: two graphs per run
        runs = [{**run, **{side: _page_document(run[side]) if run.get(side) else None
                           for side in ("before", "after")}}
                for run in document["runs"]]
        return {**document, "runs": runs}
    nodes = [{k: v for k, v in node.items() if k not in _NOT_ON_PAGE}
             for node in document["nodes"]]
    # the groups stay: the classes of modules that made no node of their own
    # (``backbone.encoder``, a timm ``Block``) are only there
    return {**document, "nodes": nodes}


def graph_page(document: dict[str, Any]) -> str:
    """The page of a :func:`graph_document`. Its content security policy allows its one
    script and nothing from the network."""
    from fxls.graph_page import graph_script

    script = re.sub(r"</(script)", r"<\\/\1", graph_script(), flags=re.IGNORECASE)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (f"default-src 'none'; script-src 'sha256-{digest}'; "
              "style-src 'unsafe-inline'; img-src data:")
    data = json_for_script(_page_document(document))
    what = "FX pass, before and after" if document.get("kind") == "pass" else \
        document.get("title") or "FX graph"
    title = html.escape(f"{document['name']}: {what}")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>", "</head>", "<body>",
        '<div id="fxls-graph"><noscript>The graph view needs JavaScript; '
        "<code>fxls graph FILE::Class --format table</code> prints the nodes.</noscript></div>",
        f'<script type="application/json" id="fxls-graph-data">{data}</script>',
        f"<script>{script}</script>", "</body>", "</html>",
    ]) + "\n"


RENDERERS = {"code": render_code, "table": render_table, "dot": render_dot, "json": render_json,
             "html": render_html}


def render_module(module: ModuleReport, fmt: str, report: FileReport | None = None) -> str:
    """``module``'s graph in format ``fmt``; ``report`` (the file's) adds its problems."""
    return RENDERERS[fmt](module, report)
