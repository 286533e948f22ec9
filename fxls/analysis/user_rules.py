"""FX020 from the project's own rewrite rules (``rule_files`` in ``[tool.fxls]``).

A rule file is plain Python written like a ``replace_pattern`` call's arguments: pairs of
functions ``pattern_<name>(...)`` and ``replacement_<name>(...)`` with the same parameters,
the replacement being a single ``return <expression>``. The pattern is traced with fxcore
and matched against each traced graph; a match is reported at the expression that built
its output node, and the quick fix writes the replacement expression with the matched
inputs' source text substituted for its parameters.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxcore._symbolic_trace import symbolic_trace
from fxcore.graph import Graph
from fxcore.node import Node
from fxcore.subgraph_rewriter import find_matches
from fxls.analysis.context import ModuleContext
from fxls.analysis.diagnostics import diagnostic
from fxls.report import Diagnostic


@dataclass
class UserRule:
    name: str
    origin: str  # the rule file
    pattern: Graph
    parameters: list[str]
    template: ast.expr  # the replacement's return expression


def load_rule_files(paths: Iterable[str], root: str) -> tuple[list[UserRule], list[str]]:
    """Rules from every file, and a message for each file or rule that could not be used."""
    rules: list[UserRule] = []
    problems: list[str] = []
    for entry in paths:
        path = Path(entry) if Path(entry).is_absolute() else Path(root) / entry
        try:
            spec = importlib.util.spec_from_file_location(f"_fxls_rules_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as error:
            problems.append(f"rule file {entry}: {type(error).__name__}: {error}")
            continue
        for name, pattern in vars(module).items():
            if not name.startswith("pattern_") or not callable(pattern):
                continue
            rule_name = name.removeprefix("pattern_")
            replacement = getattr(module, f"replacement_{rule_name}", None)
            try:
                rules.append(_make_rule(rule_name, str(path), pattern, replacement))
            except Exception as error:
                problems.append(f"rule {rule_name} in {entry}: {error}")
    return rules, problems


def _make_rule(name: str, origin: str, pattern: Callable[..., Any], replacement: Any) -> UserRule:
    if not callable(replacement):
        raise ValueError(f"no replacement_{name} function")
    tree = ast.parse(textwrap.dedent(inspect.getsource(replacement)))
    function = tree.body[0]
    if not isinstance(function, ast.FunctionDef):
        raise ValueError("the replacement must be a function")
    body = [s for s in function.body if not isinstance(s, ast.Expr)]  # skip a docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise ValueError("the replacement must be a single `return <expression>`")
    parameters = [a.arg for a in function.args.args]
    return UserRule(name, origin, symbolic_trace(pattern).graph, parameters, body[0].value)


class _Substitute(ast.NodeTransformer):
    def __init__(self, values: dict[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.values.get(node.id, node)


def _operands(expr: ast.expr, node: Node) -> list[ast.expr] | None:
    """The sub-expressions of ``expr`` that became ``node.args``, in order."""
    if isinstance(expr, ast.BinOp):
        return [expr.left, expr.right]
    if isinstance(expr, ast.UnaryOp):
        return [expr.operand]
    if isinstance(expr, ast.Compare) and len(expr.comparators) == 1:
        return [expr.left, expr.comparators[0]]
    if isinstance(expr, ast.Subscript):
        return [expr.value, expr.slice]
    if isinstance(expr, ast.Call):
        if node.op == "call_method" and isinstance(expr.func, ast.Attribute):
            return [expr.func.value, *expr.args]
        return list(expr.args)
    return None


def _span_key(span: Any) -> tuple[int, int, int, int]:
    return (span.line, span.col, span.end_line, span.end_col)


def _input_text(
    ctx: ModuleContext, rule: UserRule, placeholder: Node, nodes_map: dict[Node, Node],
    expressions: dict[tuple[int, int, int, int], ast.expr],
) -> str | None:
    """How the matched expression spells the value bound to ``placeholder``."""
    for pattern_node in rule.pattern.nodes:
        if pattern_node.op in ("placeholder", "output") or pattern_node not in nodes_map:
            continue
        for index, arg in enumerate(pattern_node.args):
            if arg is not placeholder:
                continue
            matched = nodes_map[pattern_node]
            span = matched.meta.get("source")
            expr = expressions.get(_span_key(span)) if span is not None else None
            operands = _operands(expr, matched) if expr is not None else None
            if operands is not None and index < len(operands):
                return ast.get_source_segment(ctx.source, operands[index]) or ast.unparse(
                    operands[index])
    matched_input = nodes_map.get(placeholder)
    if matched_input is not None and matched_input.op == "placeholder":
        return str(matched_input.target).lstrip("*")
    return None


def find_user_rewrites(
    ctx: ModuleContext, rules: Sequence[UserRule], tree: ast.AST | None
) -> list[Diagnostic]:
    gm = ctx.graph_module
    if gm is None or not rules or tree is None:
        return []
    expressions = {
        (e.lineno, e.col_offset, e.end_lineno or e.lineno, e.end_col_offset or 0): e
        for e in ast.walk(tree)
        if isinstance(e, ast.expr) and hasattr(e, "end_lineno")
    }
    found = []
    for rule in rules:
        placeholders = [n for n in rule.pattern.nodes if n.op == "placeholder"]
        for match in find_matches(gm.graph, rule.pattern):
            span = match.anchor.meta.get("source")
            if span is None or span.file != ctx.path or _span_key(span) not in expressions:
                continue
            texts = {}
            for parameter, placeholder in zip(rule.parameters, placeholders, strict=False):
                text = _input_text(ctx, rule, placeholder, match.nodes_map, expressions)
                if text is None:
                    break
                texts[parameter] = ast.parse(f"({text})", mode="eval").body
            else:
                template = ast.parse(ast.unparse(rule.template), mode="eval").body
                replacement = ast.unparse(_Substitute(texts).visit(template))
                found.append(diagnostic(
                    "FX020", f"rewrite available ({rule.name}, from {Path(rule.origin).name}); "
                    f"write `{replacement}`", span, ctx.class_name,
                    rule=rule.name, replacement=replacement))
    return found
