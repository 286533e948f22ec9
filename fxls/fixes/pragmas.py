"""Fixes that add an fxls pragma or a ``torch.fx.wrap`` registration instead of editing code:
FX101 (init stub), leaf classes, wrapped helpers, concrete arguments (FX001-FX003)."""

from __future__ import annotations

import ast

from fxls.fixes.base import Fix, TextEdit
from fxls.fixes.source_map import Located, indentation

_PLACEHOLDER_BY_ANNOTATION = {"int": "8", "float": "0.1", "bool": "False", "str": "''"}


def _class_named(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name), None)


def _function_named(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _pragma_above(located: Located, node: ast.ClassDef, text: str) -> TextEdit:
    line = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    indent = indentation(located.text, line)
    return TextEdit(line, 0, line, 0, f"{indent}# fxls: {text}\n")


def init_stub(located: Located, class_name: str) -> list[Fix]:
    cls = _class_named(located.tree, class_name)
    if cls is None:
        return []
    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return []
    args = init.args
    positional = args.posonlyargs + args.args
    required = positional[1 : len(positional) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    if not required:
        return []
    values = []
    for arg in required:
        annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
        values.append(f"{arg.arg}={_PLACEHOLDER_BY_ANNOTATION.get(annotation, '8')}")
    edit = _pragma_above(located, cls, "init " + ", ".join(values))
    title = f"Add `# fxls: init` for {class_name} (edit the values to real ones)"
    return [Fix(title, "FX101", [edit], safe=False, expect_same_outputs=False)]


def mark_leaf(located: Located, class_name: str, code: str) -> list[Fix]:
    cls = _class_named(located.tree, class_name)
    if cls is None:
        return []
    edit = _pragma_above(located, cls, "leaf")
    title = f"Trace `{class_name}` as a leaf module (`# fxls: leaf`)"
    return [Fix(title, code, [edit], safe=False, leaf_class=class_name)]


def wrap_function(located: Located, function_name: str, code: str) -> list[Fix]:
    function = _function_named(located.tree, function_name)
    if function is None or not _imports_torch(located.tree):
        return []
    end = function.end_lineno or function.lineno
    edit = TextEdit(end + 1, 0, end + 1, 0, f'\n\ntorch.fx.wrap("{function_name}")\n')
    title = f"Wrap `{function_name}` with `torch.fx.wrap` (traced as one call)"
    return [Fix(title, code, [edit], safe=False)]


def keep_library_opaque(located: Located, target: str, code: str) -> list[Fix]:
    """``# fxls: opaque pkg.mod.fn`` at the top of the file: the library function (or module
    class) whose code holds the problem is traced as one call (a leaf)."""
    line = 1
    tree = located.tree
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(
        getattr(tree.body[0], "value", None), ast.Constant
    ):
        line = (tree.body[0].end_lineno or tree.body[0].lineno) + 1  # after the docstring
    edit = TextEdit(line, 0, line, 0, f"# fxls: opaque {target}\n")
    title = f"Trace `{target}` as one opaque call (`# fxls: opaque`)"
    return [Fix(title, code, [edit], safe=False)]


def make_concrete(located: Located, class_name: str, names: list[str], code: str) -> list[Fix]:
    """``# fxls: concrete {...}`` for forward parameters with non-tensor defaults used in the
    condition: the branch is then decided at trace time."""
    cls = _class_named(located.tree, class_name)
    forward = next(
        (
            n
            for n in (cls.body if cls else [])
            if isinstance(n, ast.FunctionDef) and n.name == "forward"
        ),
        None,
    )
    if cls is None or forward is None:
        return []
    args = forward.args
    positional = args.args[1:]
    defaults = dict(
        zip(
            [a.arg for a in positional[len(positional) - len(args.defaults) :]],
            args.defaults,
            strict=True,
        )
    )
    defaults.update(
        {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    )
    chosen = {
        n: defaults[n] for n in names if n in defaults and isinstance(defaults[n], ast.Constant)
    }
    if not chosen:
        return []
    body = ", ".join(f"{n!r}: {ast.unparse(v)}" for n, v in chosen.items())
    edit = _pragma_above(located, cls, f"concrete {{{body}}}")
    title = f"Trace with {', '.join(chosen)} fixed to the default (`# fxls: concrete`)"
    return [Fix(title, code, [edit], safe=False, expect_same_outputs=False)]


def _imports_torch(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Import) and any((a.asname or a.name) == "torch" for a in n.names)
        for n in tree.body
    )


def condition_parameters(located: Located) -> list[str]:
    """Names used in the diagnostic's expression (candidates for ``concrete``)."""
    if located.expr is None:
        return []
    return sorted({n.id for n in ast.walk(located.expr) if isinstance(n, ast.Name)})


def enclosing_definition(located: Located, line: int) -> tuple[str, str] | None:
    """("function", name) for a module-level function containing ``line``, or
    ("class", name) for the class whose method contains it; None elsewhere."""
    for node in located.tree.body:
        end = getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)
        if not (getattr(node, "lineno", 0) <= line <= end):
            continue
        if isinstance(node, ast.FunctionDef):
            return ("function", node.name)
        if isinstance(node, ast.ClassDef):
            return ("class", node.name)
    return None
