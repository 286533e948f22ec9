"""RewritingTracer: trace code whose ``assert`` statements become ``torch._assert`` calls.

``assert x.shape[1] == 4`` cannot be traced (a Proxy has no truth value), while
``torch._assert(x.shape[1] == 4, "")`` records an assertion node. Before tracing, the
root's ``forward`` (or the function) is re-compiled from its source with every ``assert``
rewritten that way; so are the ``forward``s of its submodules that are not torch.nn's own.
The rewritten code keeps the original file name and positions (node source spans still
point at the user's lines), the function's globals (so ``wrap``-ed functions are patched
as usual) and its closure variables' values.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
import types
from collections.abc import Callable
from typing import Any

import torch

from fxcore._symbolic_trace import Tracer
from fxcore.graph import Graph

__all__ = ["AST_Rewriter", "RewritingTracer"]

_ASSERT_NAME = "_fxcore_torch_assert"
_FACTORY_NAME = "_fxcore_rewritten_factory"


class AST_Rewriter(ast.NodeTransformer):
    """Rewrites a function's source: ``assert test, msg`` -> ``torch._assert(test, msg)``."""

    def rewrite(self, fn: Callable[..., Any]) -> types.FunctionType:
        function = inspect.unwrap(getattr(fn, "__func__", fn))
        if not isinstance(function, types.FunctionType):
            raise TypeError(f"RewritingTracer can only rewrite Python functions, not {fn!r}")
        definition = _function_ast(function)
        definition.decorator_list = []  # the decorators already ran on the original
        self.visit(definition)
        return _compile_like(function, definition)

    def visit_Assert(self, node: ast.Assert) -> ast.Expr:
        message = node.msg if node.msg is not None else ast.Constant(value="")
        call = ast.Call(
            func=ast.Name(id=_ASSERT_NAME, ctx=ast.Load()),
            args=[self.visit(node.test), message],
            keywords=[],
        )
        for created in (call, call.func):
            ast.copy_location(created, node)
        return ast.copy_location(ast.Expr(value=call), node)


def _function_ast(function: types.FunctionType) -> ast.FunctionDef | ast.AsyncFunctionDef:
    lines, first_line = inspect.getsourcelines(function)
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
        raise TypeError(f"the source of {function.__qualname__} is not a function definition")
    for node in ast.walk(definition):
        if hasattr(node, "col_offset"):
            node.col_offset += indent
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += indent  # type: ignore[operator]
    ast.increment_lineno(definition, max(first_line, 1) - 1)
    return definition


def _compile_like(
    original: types.FunctionType, definition: ast.FunctionDef | ast.AsyncFunctionDef
) -> types.FunctionType:
    """The rewritten definition as a function with ``original``'s globals, defaults and
    closure values: compiled inside a factory taking the free variables as parameters."""
    free_names = list(original.__code__.co_freevars)
    factory = ast.FunctionDef(
        name=_FACTORY_NAME,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=name) for name in (*free_names, _ASSERT_NAME)],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[definition, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.copy_location(factory, definition)
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile(module, original.__code__.co_filename, "exec"), original.__globals__, namespace)
    cells = original.__closure__ or ()
    values = [_cell_value(cell) for cell in cells]
    built = namespace[_FACTORY_NAME](*values, torch._assert)
    rewritten = types.FunctionType(
        built.__code__,
        original.__globals__,
        original.__name__,
        original.__defaults__,
        built.__closure__,
    )
    rewritten.__kwdefaults__ = copy.copy(original.__kwdefaults__)
    functools.update_wrapper(rewritten, original)
    del rewritten.__wrapped__  # the rewritten code is what runs: do not unwrap back to it
    return rewritten


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later): keep it unbound
        return None


_rewritten_classes: dict[type, type] = {}


def _rewritten_class(cls: type[torch.nn.Module]) -> type[torch.nn.Module]:
    rewritten = _rewritten_classes.get(cls)
    if rewritten is None:
        forward = AST_Rewriter().rewrite(cls.forward)
        rewritten = type(
            cls.__name__,
            (cls,),
            {"forward": forward, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
        )
        _rewritten_classes[cls] = rewritten
    return rewritten


def _is_torch_nn_class(cls: type) -> bool:
    return cls.__module__.startswith("torch.nn.") or cls is torch.nn.Module


def _rewrite_module(module: torch.nn.Module) -> torch.nn.Module:
    """A shallow copy of ``module`` of a subclass whose ``forward`` is rewritten, holding
    rewritten copies of its submodules (torch.nn's own are kept as they are)."""
    cls = type(module)
    if _is_torch_nn_class(cls) or "forward" in module.__dict__:
        return module
    copied = _rewritten_class(cls).__new__(_rewritten_class(cls))
    copied.__dict__.update(module.__dict__)
    copied.__dict__["_modules"] = {
        name: None if child is None else _rewrite_module(child)
        for name, child in module._modules.items()
    }
    return copied


def _rewrite(root: torch.nn.Module | Callable[..., Any]) -> torch.nn.Module | Callable[..., Any]:
    if isinstance(root, torch.nn.Module):
        return _rewrite_module(root)
    return AST_Rewriter().rewrite(root)


class RewritingTracer(Tracer):
    """A Tracer that first rewrites ``assert`` statements into ``torch._assert`` calls."""

    def trace(
        self,
        root: torch.nn.Module | Callable[..., Any],
        concrete_args: dict[str, Any] | None = None,
    ) -> Graph:
        return super().trace(_rewrite(root), concrete_args)
