"""FX020: built-in rewrite rules, found in the source and confirmed against the traced graph.

Each rule recognises an expression shape (``x * torch.sigmoid(x)``...) and says what to write
instead. A match is reported only when the traced graph has a node created by exactly that
expression, so code that never runs in a traced forward is not flagged.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fxls.analysis.context import ModuleContext
from fxls.analysis.diagnostics import diagnostic
from fxls.report import Diagnostic

Rewriter = Callable[[ast.expr, "_Text"], str | None]


class _Text:
    def __init__(self, source: str, functional: str) -> None:
        self.source = source
        self.functional = functional  # how this file spells torch.nn.functional

    def of(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)


def _dotted(node: ast.AST) -> str | None:
    """``torch.nn.functional.relu`` for a chain of attributes on a name (cheaper than unparse)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _method_call(node: ast.AST, method: str) -> ast.Call | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method):
        return node
    return None


def _sigmoid_of(node: ast.AST) -> ast.expr | None:
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        dotted = _dotted(node.func)
        if dotted in ("torch.sigmoid", "F.sigmoid", "torch.nn.functional.sigmoid"):
            return node.args[0]
    call = _method_call(node, "sigmoid")
    if call is not None and not call.args:
        return call.func.value  # type: ignore[attr-defined]
    return None


def _silu(node: ast.expr, text: _Text) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            inner = _sigmoid_of(b)
            if inner is not None and _same(inner, a):
                return f"{text.functional}.silu({text.of(a)})"
    return None


def _transposed(node: ast.AST) -> ast.expr | None:
    call = _method_call(node, "t")
    if call is not None and not call.args:
        return call.func.value  # type: ignore[attr-defined]
    if isinstance(node, ast.Attribute) and node.attr == "T":
        return node.value
    return None


def _linear(node: ast.expr, text: _Text) -> str | None:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
        return None
    product, bias = node.left, node.right
    x = w = None
    if isinstance(product, ast.Call) and _dotted(product.func) == "torch.matmul" and len(
        product.args
    ) == 2:
        x, w = product.args[0], _transposed(product.args[1])
    elif isinstance(product, ast.BinOp) and isinstance(product.op, ast.MatMult):
        x, w = product.left, _transposed(product.right)
    if x is None or w is None:
        return None
    return f"{text.functional}.linear({text.of(x)}, {text.of(w)}, {text.of(bias)})"


def _relu(node: ast.expr, text: _Text) -> str | None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if (isinstance(a, ast.Compare) and len(a.ops) == 1 and isinstance(a.ops[0], ast.Gt)
                    and isinstance(a.comparators[0], ast.Constant)
                    and a.comparators[0].value == 0 and _same(a.left, b)):
                return f"torch.relu({text.of(b)})"
    return None


def _double_transpose(node: ast.expr, text: _Text) -> str | None:
    outer = _method_call(node, "transpose")
    if outer is not None and len(outer.args) == 2:
        inner = _method_call(outer.func.value, "transpose")  # type: ignore[attr-defined]
        if inner is not None and len(inner.args) == 2:
            dims_outer = sorted(ast.dump(a) for a in outer.args)
            dims_inner = sorted(ast.dump(a) for a in inner.args)
            if dims_outer == dims_inner:
                return text.of(inner.func.value)  # type: ignore[attr-defined]
    first = _transposed(node)
    if first is not None and isinstance(node, ast.Call):
        second = _transposed(first)
        if second is not None:
            return text.of(second)
    return None


def _view_view(node: ast.expr, text: _Text) -> str | None:
    outer = _method_call(node, "view")
    if outer is None:
        return None
    inner = _method_call(outer.func.value, "view")  # type: ignore[attr-defined]
    if inner is None:
        return None
    args = ", ".join(text.of(a) for a in outer.args)
    return f"{text.of(inner.func.value)}.view({args})"  # type: ignore[attr-defined]


def _single_cat(node: ast.expr, text: _Text) -> str | None:
    if (isinstance(node, ast.Call) and _dotted(node.func) == "torch.cat" and node.args
            and isinstance(node.args[0], ast.List | ast.Tuple) and len(node.args[0].elts) == 1
            and not isinstance(node.args[0].elts[0], ast.Starred)):
        return text.of(node.args[0].elts[0])
    return None


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    rewrite: Rewriter


RULES = (
    Rule("silu", "x * sigmoid(x) is F.silu(x)", _silu),
    Rule("linear", "matmul(x, w.t()) + b is F.linear(x, w, b)", _linear),
    Rule("relu", "(x > 0) * x is relu(x)", _relu),
    Rule("double-transpose", "transposing twice is the identity", _double_transpose),
    Rule("view-view", "x.view(a).view(b) is x.view(b)", _view_view),
    Rule("single-cat", "torch.cat([x]) is x", _single_cat),
)


def functional_alias(namespace: dict[str, object]) -> str:
    import torch.nn.functional as functional

    for name, value in namespace.items():
        if value is functional and name.isidentifier():
            return name
    return "torch.nn.functional"


def find_rewrites(ctx: ModuleContext, candidates: list[Candidate]) -> Iterable[Diagnostic]:
    """The file's rewrite ``candidates`` that this module's graph confirms."""
    gm = ctx.graph_module
    if gm is None:
        return []
    node_spans = {}
    for node in gm.graph.nodes:
        span = node.meta.get("source")
        if span is not None and span.file == ctx.path:
            node_spans[(span.line, span.col, span.end_line, span.end_col)] = node
    found = []
    claimed: list[tuple[int, int, int, int]] = []
    for key, rule, replacement in candidates:
        if key not in node_spans or any(_inside(key, other) for other in claimed):
            continue
        claimed.append(key)
        span = node_spans[key].meta["source"]
        found.append(diagnostic(
            "FX020", f"rewrite available ({rule.name}): {rule.description}; "
            f"write `{replacement}`", span, ctx.class_name,
            rule=rule.name, replacement=replacement))
    return found


Candidate = tuple[tuple[int, int, int, int], Rule, str]


def candidates(tree: ast.AST, source: str, namespace: dict[str, object]) -> list[Candidate]:
    """Every expression of the file a rule rewrites, outermost first (once per file)."""
    text = _Text(source, functional_alias(namespace))
    found: list[Candidate] = []
    for expr in ast.walk(tree):
        if not isinstance(expr, ast.BinOp | ast.Call) or not hasattr(expr, "end_lineno"):
            continue
        key = (expr.lineno, expr.col_offset, expr.end_lineno or expr.lineno,
               expr.end_col_offset or 0)
        for rule in RULES:
            replacement = rule.rewrite(expr, text)
            if replacement is not None:
                found.append((key, rule, replacement))
                break
    return found


def _inside(inner: tuple[int, int, int, int], outer: tuple[int, int, int, int]) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (
        outer[2], outer[3])
