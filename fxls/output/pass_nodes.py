"""The graph after an FX pass, rebuilt from a run of the report: its nodes in the order the
code after the pass defines them, each marked (added, rewired, kept) and followed by the
nodes the pass removed. What the text views (:mod:`fxls.output.pass_graph`) and the page
(:mod:`fxls.output.pass_page`) both draw.

The report holds, per run, the code before and after and the nodes the pass created or
changed; the other nodes of the graph after the pass are those of the graph before it
(the traced model's), in the order the code after the pass defines them.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field, replace

from fxls.graph_view.pass_view import graph_label
from fxls.output.pass_placement import place_added
from fxls.output.pass_swaps import module_swaps
from fxls.report import ModuleReport, NodeInfo, NodeOp, PassGraphRun

ADDED, REWIRED, REMOVED, KEPT = "+", "~", "-", " "
#: the suffix the analysis puts on the label of a model's export graph (the analysis'
#: ``passes.checks.EXPORT_SUFFIX``: this side imports no torch)
EXPORT_SUFFIX = " (export)"


@dataclass(slots=True)
class MarkedNode:
    """A node of the graph after a pass (or one it removed), as the views show it."""

    mark: str
    node: NodeInfo
    #: the nodes it reads, in the graph after the pass
    inputs: list[str] = field(default_factory=list)
    #: the lines it came from: the pass's lines for a node the pass made or changed
    lines: str = ""
    #: a call of a module the pass put in place of another: ``Conv2d+BatchNorm2d → Conv2d``
    swap: str | None = None


def after_graph(run: PassGraphRun, before: ModuleReport | None) -> list[MarkedNode]:
    """The graph after the pass in node order, each node marked, with what the model knew
    of the nodes the pass changed (module, shape), the added ones placed in the module of
    the node whose uses they took, and the module swaps; the graph before it when the pass
    left none (it raised)."""
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
    order = code_nodes(run.after if run.after is not None else run.before or "")
    if order is None:
        return []
    names = {name for name, _ in order}
    marked = []
    for name, expression in order:
        node = _with_model_info(changed[name], known.get(name), name not in run.added) \
            if name in changed else known.get(name) or guessed_node(name, expression, names)
        mark = KEPT if run.after is None else ADDED if name in run.added \
            else REWIRED if name in run.rewired else KEPT
        inputs = names_in(expression, names - {name})
        shown = ",".join(lines[name]) if name in lines else _line(node)
        marked.append(MarkedNode(mark, node, inputs, shown))
    users: dict[str, list[str]] = {m.node.name: [] for m in marked}
    for m in marked:
        for name in m.inputs:
            users[name].append(m.node.name)
    for m in marked:  # a kept node's users are those of the graph before the pass
        m.node = replace(m.node, users=users[m.node.name])
    if run.after is None:
        return marked
    kept = {name: node for name, node in known.items() if name not in run.added}
    placed = place_added([m.node for m in marked], kept, set(run.added))
    swaps = module_swaps(run, list(known.values()))
    for m, node in zip(marked, placed, strict=True):
        swap = swaps.get(node.target) if node.op == "call_module" else None
        if swap is not None:
            m.swap, node = swap.text, replace(node, module_type=swap.module_type)
        m.node = node
    return marked


def _with_model_info(node: NodeInfo, model: NodeInfo | None, same_call: bool) -> NodeInfo:
    """A node the pass changed, as the pass run reports it (its span the pass line), with
    what the traced model knew of the node of its name: its module, and when it still
    calls the same (rewired, not made anew) its target as the model names it, shape and
    dtype."""
    if model is None or node is model:
        return node
    node = replace(node, module_path=node.module_path or model.module_path)
    if not same_call:
        return node
    return replace(node, target=model.target, module_type=node.module_type or model.module_type,
                   shape=node.shape if node.shape is not None else model.shape,
                   dtype=node.dtype or model.dtype)


def removed_nodes(run: PassGraphRun, before: ModuleReport | None) -> list[MarkedNode]:
    known = {n.name: n for n in before.nodes} if before is not None else {}
    return [MarkedNode(REMOVED, known.get(name) or guessed_node(name, "", set()), [],
                       _line(known.get(name)))
            for name in run.removed]


def _line(node: NodeInfo | None) -> str:
    return str(node.span.line) if node is not None and node.span is not None else ""


def _inputs(node: NodeInfo, known: dict[str, NodeInfo]) -> list[str]:
    return [name for name in re.findall(r"%(\w+)", f"{node.args} {node.kwargs}")
            if name in known]


def graph_before(run: PassGraphRun, graphs: dict[str, ModuleReport]) -> ModuleReport | None:
    """The report's graph a run started from (its label's), when it is the graph the run's
    code shows: an export graph's rows are those of ``ep.graph_module``, not of the
    core-ATen graph or the ``ep.module()`` a pass may have run on (then the graph is read
    from the code)."""
    found = graphs.get(graph_label(run))
    order = code_nodes(run.before or "")
    if found is None or order is None:
        return found
    known = {node.name for node in found.nodes}
    return found if all(name in known for name, _ in order) else None


def code_nodes(code: str) -> list[tuple[str, str]] | None:
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


def names_in(expression: str, names: set[str]) -> list[str]:
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names and node.id not in found:
            found.append(node.id)
    return found


def guessed_node(name: str, expression: str, names: set[str]) -> NodeInfo:
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
    elif target.startswith("torch.ops."):  # an ATen operator, named as torch prints it
        target = target.removeprefix("torch.ops.")
    return NodeInfo(name, op, target, args, "{}", [])
