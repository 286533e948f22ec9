"""A traced graph whose generated code cannot be built: the diagnostic that says why.

torch.fx (and fxcore, which must behave the same) writes an attribute path as ``self.name``
when ``name.isidentifier()``, else as ``getattr(self, "name")`` with the name pasted between
double quotes. A submodule, parameter or buffer named ``'a"b'``, ``'a\\nb'`` or ``'class'``
therefore makes the generated ``forward`` a SyntaxError, which ``symbolic_trace`` raises
after tracing the whole graph. The user's fix is the name, so the diagnostic is put on the
line that registered it (``add_module``/``setattr``/``register_*``, a ``ModuleDict`` key...),
found in the file's syntax tree; else on the expression that used it, else on the class.
"""

from __future__ import annotations

import ast
import keyword
import warnings
from collections.abc import Iterator

import torch

from fxcore._codegen import format_target
from fxcore.graph import Graph
from fxcore.node import Node
from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic
from fxls.report import Diagnostic

#: calls whose string argument names a submodule, parameter or buffer
_REGISTERING = frozenset({"add_module", "register_module", "register_parameter",
                          "register_buffer", "setattr"})
_MESSAGE_LIMIT = 160


def codegen_failure(
    error: BaseException, graph: Graph | None, root: torch.nn.Module, class_name: str,
    class_span: SourceSpan, tree: ast.AST | None, reportable: str,
) -> tuple[Diagnostic, str]:
    """FX004 for ``class_name``, whose traced ``graph`` could not become a GraphModule
    (``error``), and the module's reason for the statistics."""
    detail = error.msg if isinstance(error, SyntaxError) else str(error)
    cause = _short(f"{type(error).__name__}: {detail}")
    node = _failing_node(error, graph)
    found = _odd_name(node, graph)
    if found is None:
        where = _span_of(node, reportable) or class_span
        message = (f"the graph of `{class_name}` was traced but its Python code could not "
                   f"be built ({cause}); torch.fx's symbolic_trace raises this error too")
        return diagnostic("FX004", message, where, class_name), f"its code: {cause}"
    used_by, name = found
    kind = _kind_of(root, used_by.target)
    where = (_registration(tree, name, reportable) or _span_of(used_by, reportable)
             or class_span)
    written = format_target("self", name)
    shown = f", `{written}`," if written.isprintable() else ""
    message = (f"the {kind} name {name!r} {_why(name)}: the code torch.fx generates for "
               f"the graph of `{class_name}`{shown} is not valid Python ({cause}), and "
               f"symbolic_trace raises that error. Name the {kind} with a Python "
               f"identifier (letters, digits and `_`, not a keyword)")
    return (diagnostic("FX004", message, where, class_name),
            f"the {kind} name {name!r} {_why(name)}")


def misread_names(
    graph: Graph, root: torch.nn.Module, class_name: str, tree: ast.AST | None,
    reportable: str,
) -> list[Diagnostic]:
    """FX004 for a name whose generated code compiles but reads another attribute: torch.fx
    pastes ``'a\\b'`` into ``getattr(self, "a\\b")``, a backspace, so calling the traced
    module fails (symbolic_trace does not notice, and fxls runs graphs node by node)."""
    found: list[Diagnostic] = []
    seen: set[str] = set()
    for node in graph.nodes:
        for name in _attribute_names(node):
            if name in seen or name.isidentifier() or not _reads_another(name):
                continue
            seen.add(name)
            kind = _kind_of(root, node.target) if node.op != "call_function" else "attribute"
            where = _registration(tree, name, reportable) or _span_of(node, reportable)
            message = (f"the {kind} name {name!r} {_why(name)}: the code torch.fx generates "
                       f"for the graph of `{class_name}`, `{format_target('self', name)}`, "
                       f"reads the attribute {_as_read(name)!r} instead, so calling the "
                       f"traced module raises AttributeError (symbolic_trace does not "
                       f"notice). Name the {kind} with a Python identifier (letters, digits "
                       f"and `_`, not a keyword)")
            found.append(diagnostic("FX004", message, where, class_name))
    return found


def _reads_another(name: str) -> bool:
    return "\\" in name and _breaks_code(name) and _as_read(name) != name


def _as_read(name: str) -> str | None:
    """The string the generated literal ``"name"`` stands for (None: not a literal)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "invalid escape sequence"
            value = ast.literal_eval(f'"{name}"')
    except (SyntaxError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _failing_node(error: BaseException, graph: Graph | None) -> Node | None:
    """The node whose line of the generated code the SyntaxError is on."""
    lineno = getattr(error, "lineno", None)
    if graph is None or not isinstance(error, SyntaxError) or not isinstance(lineno, int):
        return None
    try:
        code = graph.python_code(root_module="self")
    except Exception:
        return None
    index = code._lineno_map.get(lineno - code._prologue_start)
    if index is None:
        return None
    return next((n for i, n in enumerate(graph.nodes) if i == index), None)


def _odd_name(node: Node | None, graph: Graph | None) -> tuple[Node, str] | None:
    """The node and the attribute name that breaks the generated code: the failing node's
    first, else the first in the graph."""
    candidates = [node] if node is not None else list(graph.nodes) if graph else []
    for candidate in candidates:
        for name in _attribute_names(candidate):
            if _breaks_code(name):
                return candidate, name
    return None


def _attribute_names(node: Node) -> Iterator[str]:
    if node.op in ("call_module", "get_attr", "call_method") and isinstance(node.target, str):
        yield from node.target.split(".")
    elif (node.op == "call_function" and getattr(node.target, "__name__", "") == "getattr"
          and len(node.args) == 2 and isinstance(node.args[1], str)):
        yield node.args[1]


def _breaks_code(name: str) -> bool:
    if name.isidentifier():
        return keyword.iskeyword(name)
    return any(c in name for c in '"\\') or not name.isprintable()


def _why(name: str) -> str:
    if keyword.iskeyword(name):
        return "is a Python keyword"
    if '"' in name:
        return "contains a double quote"
    if "\n" in name or "\r" in name:
        return "contains a line break"
    if "\\" in name:
        return "contains a backslash"
    return "contains a character that cannot be written in a string literal"


def _kind_of(root: torch.nn.Module, target: str) -> str:
    owner: object = root
    for atom in target.split("."):
        owner = next((table[atom] for table in (getattr(owner, "_modules", {}),
                                                getattr(owner, "_parameters", {}),
                                                getattr(owner, "_buffers", {}))
                      if table.get(atom) is not None), None)
        if owner is None:
            return "attribute"
    if isinstance(owner, torch.nn.Parameter):
        return "parameter"
    if isinstance(owner, torch.Tensor):
        return "buffer"
    return "submodule" if isinstance(owner, torch.nn.Module) else "attribute"


def _registration(tree: ast.AST | None, name: str, file: str) -> SourceSpan | None:
    """The call in the file that registered ``name`` (a string argument of ``add_module``,
    ``setattr``...), else the first string literal equal to it (a ``ModuleDict`` key)."""
    if tree is None:
        return None
    literal: ast.AST | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _callee(node.func) in _REGISTERING and any(
                _is_text(arg, name) for arg in node.args):
            return _node_span(node, file)
        if literal is None and _is_text(node, name):
            literal = node
    return _node_span(literal, file) if literal is not None else None


def _callee(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _is_text(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == name


def _node_span(node: ast.AST, file: str) -> SourceSpan:
    line = node.lineno  # type: ignore[attr-defined]
    end_line = node.end_lineno or line  # type: ignore[attr-defined]
    end_col = node.end_col_offset or 0  # type: ignore[attr-defined]
    return SourceSpan(file, line, end_line, node.col_offset, end_col)  # type: ignore[attr-defined]


def _span_of(node: Node | None, file: str) -> SourceSpan | None:
    span = node.meta.get("source") if node is not None else None
    return span if isinstance(span, SourceSpan) and span.file == file else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."
