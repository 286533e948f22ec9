"""``fxls graph FILE::<pass>``: what an FX pass did to each graph it ran on.

``code`` is a unified diff of each graph's generated code before and after the pass (the
editor's before/after view, as text); ``table`` lists the graph after the pass with a mark
column (``+`` added, ``~`` rewired) and then its removed nodes (``-``); ``json`` gives the runs
with the code before and after; ``dot`` draws the graph after the pass with the added nodes
highlighted and the removed ones listed; ``html`` is the graph view's before/after page
(:mod:`fxls.output.pass_page`).

The report holds, per run, the code before and after and the nodes the pass created or
changed; the other nodes of the graph after the pass are those of the graph before it
(the traced model's), in the order the code after the pass defines them.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fxls.graph_render import (
    TABLE_HEADER,
    format_table,
    node_cells,
)
from fxls.pass_view import graph_label, pass_text, run_diff, run_summary
from fxls.report import (
    Diagnostic,
    FileReport,
    ModuleReport,
    NodeInfo,
    NodeOp,
    PassGraphRun,
    PassReport,
)

ADDED, REWIRED, REMOVED, KEPT = "+", "~", "-", " "
_CSS_CLASS = {ADDED: "added", REWIRED: "rewired", REMOVED: "removed", KEPT: ""}
_DOT_MARK = {
    ADDED: 'style="filled,bold", fillcolor="#c8f7c5", color="#1a7f37"',
    REWIRED: 'style="filled", fillcolor="#fff8c5", color="#9a6700"',
    REMOVED: 'style="dashed", color="#cf222e", fontcolor="#cf222e"',
}


@dataclass(slots=True)
class MarkedNode:
    """A node of the graph after a pass (or one it removed), as the views show it."""

    mark: str
    node: NodeInfo
    #: the nodes it reads, in the graph after the pass
    inputs: list[str] = field(default_factory=list)
    #: the lines it came from: the pass's lines for a node the pass made or changed
    lines: str = ""


def graphs_of(report: FileReport) -> dict[str, ModuleReport]:
    """The graphs passes ran on, by label: the file's traced classes and module-level
    graphs."""
    return {m.name: m for m in [*report.graphs, *report.modules] if m.nodes}


def after_graph(run: PassGraphRun, before: ModuleReport | None) -> list[MarkedNode]:
    """The graph after the pass in node order, each node marked; the graph before it when
    the pass left none (it raised)."""
    known = {n.name: n for n in before.nodes} if before is not None else {}
    changed: dict[str, NodeInfo] = {}
    lines: dict[str, list[str]] = {}
    for node in run.nodes:
        changed.setdefault(node.name, node)
        if node.span is not None and str(node.span.line) not in lines.setdefault(node.name, []):
            lines[node.name].append(str(node.span.line))
    if run.after is None:  # the pass raised: the graph before it, unmarked
        if before is not None:
            return [MarkedNode(KEPT, n, _inputs(n, known), _line(n)) for n in before.nodes]
        changed, lines = {}, {}
    order = _code_nodes(run.after if run.after is not None else run.before or "")
    if order is None:
        return []
    names = {name for name, _ in order}
    marked = []
    for name, expression in order:
        node = changed.get(name) or known.get(name) or _guessed(name, expression, names)
        mark = KEPT if run.after is None else ADDED if name in run.added \
            else REWIRED if name in run.rewired else KEPT
        inputs = _names_in(expression, names - {name})
        shown = ",".join(lines[name]) if name in lines else _line(node)
        marked.append(MarkedNode(mark, node, inputs, shown))
    users: dict[str, list[str]] = {m.node.name: [] for m in marked}
    for m in marked:
        for name in m.inputs:
            users[name].append(m.node.name)
    for m in marked:  # a kept node's users are those of the graph before the pass
        m.node = replace(m.node, users=users[m.node.name])
    return marked


def removed_nodes(run: PassGraphRun, before: ModuleReport | None) -> list[MarkedNode]:
    known = {n.name: n for n in before.nodes} if before is not None else {}
    return [MarkedNode(REMOVED, known.get(name) or _guessed(name, "", set()), [],
                       _line(known.get(name)))
            for name in run.removed]


def _line(node: NodeInfo | None) -> str:
    return str(node.span.line) if node is not None and node.span is not None else ""


def _inputs(node: NodeInfo, known: dict[str, NodeInfo]) -> list[str]:
    return [name for name in re.findall(r"%(\w+)", f"{node.args} {node.kwargs}")
            if name in known]


def _code_nodes(code: str) -> list[tuple[str, str]] | None:
    """``(node name, its expression)`` in the order the generated ``forward`` defines them:
    the parameters (placeholders), each assignment, ``output`` for the return. None when
    the code is not a function."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return None
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if function is None:
        return None
    arguments = function.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            parameters.append(extra)
    nodes = [(p.arg, "") for p in parameters if p.arg != "self"]
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name) \
                and not (isinstance(statement.value, ast.Constant)
                         and statement.value.value is None):  # `x = None` frees x
            nodes.append((statement.targets[0].id, ast.unparse(statement.value)))
        elif isinstance(statement, ast.Return) and statement.value is not None:
            nodes.append(("output", ast.unparse(statement.value)))
    return nodes


def _names_in(expression: str, names: set[str]) -> list[str]:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names and node.id not in found:
            found.append(node.id)
    return found


def _guessed(name: str, expression: str, names: set[str]) -> NodeInfo:
    """A node known only from its line of generated code."""
    op: NodeOp = "call_function"
    if not expression and name in names:
        op = "placeholder"
    elif name == "output":
        op = "output"
    elif re.fullmatch(r"self\.[\w.]+", expression):
        op = "get_attr"
    elif re.match(r"self\.[\w.]+\(", expression):
        op = "call_module"
    elif (method := re.match(r"(\w+)\.\w+\(", expression)) and method[1] in names:
        op = "call_method"
    target = expression.split("(", 1)[0] if expression else name
    args = expression[len(target):] if expression else ""
    if op in ("get_attr", "call_module"):
        target = target.removeprefix("self.")
    elif op == "call_method":
        target = target.split(".", 1)[1]
        args = f"({expression.split('.', 1)[0]}, {args[1:]}".replace(", )", ")")
    return NodeInfo(name, op, target, args, "{}", [])


def _runs(report: PassReport, graphs: dict[str, ModuleReport]
          ) -> list[tuple[PassGraphRun, list[MarkedNode]]]:
    """Each run with its after graph followed by its removed nodes."""
    out = []
    for run in report.runs:
        before = graphs.get(graph_label(run))
        out.append((run, after_graph(run, before) + removed_nodes(run, before)))
    return out


def _title(report: PassReport, run: PassGraphRun) -> str:
    """``Net after `fuse`: +1 -2, 1 rewired`` (``no change``)."""
    counts = f"+{len(run.added)} -{len(run.removed)}"
    if run.rewired:
        counts += f", {len(run.rewired)} rewired"
    if not (run.added or run.removed or run.rewired):
        counts = "no change"
    return f"{graph_label(run)} after `{report.name}`: {counts}"


def render_pass_table(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    if not report.runs:
        return f"# {report.name}: not run: no graph to run it on\n"
    parts = []
    for run, nodes in _runs(report, graphs):
        head = [f"# {_title(report, run)}"]
        if run.problem is not None:
            head.append(f"# problem: {run.problem}")
        if run.after is None:
            head.append("# no graph after the pass: the graph before it")
        rows = [(m.mark, *node_cells(m.node, m.lines)) for m in nodes]
        parts.append("\n".join(head) + "\n" + format_table(("", *TABLE_HEADER), rows))
    return "\n".join(parts)


def render_pass_json(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    runs: list[dict[str, Any]] = []
    for run, nodes in _runs(report, graphs):
        runs.append({
            "graph": run.graph, "summary": run_summary(run), "added": list(run.added),
            "removed": list(run.removed), "rewired": list(run.rewired), "problem": run.problem,
            "before": _code(run.before), "after": _code(run.after), "diff": run_diff(run),
            "nodes": [{**m.node.to_dict(), "mark": m.mark, "inputs": m.inputs}
                      for m in nodes],
            "changed": [n.to_dict() for n in run.nodes],
        })
    document = {"name": report.name, "kind": report.kind, "graphs_from": report.graphs_from,
                "span": report.span.to_dict() if report.span is not None else None,
                "status": "problem" if report.has_problem else "ok", "runs": runs}
    return json.dumps(document, indent=2) + "\n"


def _code(code: str | None) -> str | None:
    return code.strip("\n").rstrip() if code is not None else None


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_pass_dot(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    """One cluster per graph the pass ran on: the graph after it, added nodes filled green,
    rewired ones yellow, removed ones dashed red without edges."""
    lines = [f'digraph "{_dot_escape(report.name)}" {{', "  rankdir=TB;",
             '  node [fontname="monospace", fontsize=10, shape=box];']
    for index, (run, nodes) in enumerate(_runs(report, graphs)):
        lines.append(f"  subgraph cluster_{index} {{")
        lines.append(f'    label="{_dot_escape(_title(report, run))}";')
        ids = {m.node.name: f"{index}:{m.node.name}" for m in nodes if m.mark != REMOVED}
        for m in nodes:
            ident = f"{index}:{m.node.name}" + ("(removed)" if m.mark == REMOVED else "")
            label = f"{m.mark} {m.node.name}".strip() + f"\\n{m.node.op}: {m.node.target}"
            style = _DOT_MARK.get(m.mark, "")
            lines.append(f'    "{_dot_escape(ident)}" [label="{_dot_escape(label)}"'
                         + (f", {style}" if style else "") + "];")
        for m in nodes:
            for name in m.inputs:
                if name in ids:
                    lines.append(f'    "{_dot_escape(ids[name])}" -> '
                                 f'"{_dot_escape(ids[m.node.name])}";')
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_pass_html(report: PassReport, graphs: dict[str, ModuleReport],
                     diagnostics: Sequence[Diagnostic] = ()) -> str:
    """The graph view's before/after page: per graph, the graph before and after the pass
    side by side, grouped by module, the changes and the pass's problems marked."""
    from fxls.output.pass_page import render_pass_page

    return render_pass_page(report, graphs, diagnostics)


def render_pass_code(report: PassReport, graphs: dict[str, ModuleReport]) -> str:
    return pass_text(report)


PASS_RENDERERS = {"code": render_pass_code, "table": render_pass_table,
                  "dot": render_pass_dot, "json": render_pass_json, "html": render_pass_html}


def render_pass(report: PassReport, fmt: str, graphs: dict[str, ModuleReport],
                diagnostics: Sequence[Diagnostic] = ()) -> str:
    """``report``'s before/after view; ``graphs`` are the graphs it ran on, before it;
    ``diagnostics`` the file's (the page marks the pass's own on its nodes)."""
    if fmt == "html":
        return render_pass_html(report, graphs, diagnostics)
    return PASS_RENDERERS[fmt](report, graphs)
