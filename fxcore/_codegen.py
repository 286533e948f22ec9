"""Python source for a graph: the ``forward`` a GraphModule compiles, as torch.fx writes it.

One statement per node, operators printed as operators, values freed after their last use
(``;  x = None``), functions referenced through generated globals.
"""

from __future__ import annotations

import enum
import re
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from fxcore import _pytree
from fxcore._naming import CUSTOM_BUILTINS, Namespace
from fxcore._pytree import PyTreeInfo
from fxcore.node import Argument, Node, _get_qualified_name, _type_repr

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["CodeGen", "PythonCode", "generate", "magic_methods", "reflectable_magic_methods"]

reflectable_magic_methods = {
    "add": "{} + {}",
    "sub": "{} - {}",
    "mul": "{} * {}",
    "floordiv": "{} // {}",
    "truediv": "{} / {}",
    "div": "{} / {}",
    "mod": "{} % {}",
    "pow": "{} ** {}",
    "lshift": "{} << {}",
    "rshift": "{} >> {}",
    "and_": "{} & {}",
    "or_": "{} | {}",
    "xor": "{} ^ {}",
    "getitem": "{}[{}]",
    "matmul": "{} @ {}",
}

magic_methods = {
    "eq": "{} == {}",
    "ne": "{} != {}",
    "lt": "{} < {}",
    "gt": "{} > {}",
    "le": "{} <= {}",
    "ge": "{} >= {}",
    "pos": "+{}",
    "neg": "-{}",
    "invert": "~{}",
    **reflectable_magic_methods,
}

inplace_methods = {
    "iadd": "{} += {}",
    "iand": "{} &= {}",
    "ifloordiv": "{} //= {}",
    "ilshift": "{} <<= {}",
    "imod": "{} %= {}",
    "imul": "{} *= {}",
    "imatmul": "{} @= {}",
    "ior": "{} |= {}",
    "ipow": "{} **= {}",
    "irshift": "{} >>= {}",
    "isub": "{} -= {}",
    "itruediv": "{} /= {}",
    "ixor": "{} ^= {}",
    "setitem": "{}[{}] = {}",
}

_TYPING_ORIGINS: dict[Any, Any] = {
    list: typing.List,  # noqa: UP006
    dict: typing.Dict,  # noqa: UP006
    set: typing.Set,  # noqa: UP006
    frozenset: typing.FrozenSet,  # noqa: UP006
    tuple: typing.Tuple,  # noqa: UP006
}

_TORCH_BUT_NOT_DYNAMO = re.compile(r"^torch(?:\.(?!_dynamo\.|_inductor\.)[^.]+)*$").fullmatch
_COUNTER = re.compile(r"# COUNTER: (\d+)")


@dataclass
class PythonCode:
    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] = field(default_factory=dict)
    _prologue_start: int = 0


def _is_from_torch(obj: object) -> bool:
    module_name = getattr(obj, "__module__", None)
    if module_name is not None:
        return _TORCH_BUT_NOT_DYNAMO(module_name) is not None
    name = getattr(obj, "__name__", None)
    if name is not None and name != "torch":
        for candidate in (torch, torch.nn.functional):
            if getattr(candidate, name, None) is obj:
                return True
    return False


def format_target(base: str, target: str) -> str:
    result = base
    for atom in target.split("."):
        result = f"{result}.{atom}" if atom.isidentifier() else f'getattr({result}, "{atom}")'
    return result


def _source_comment(node: Node) -> str:
    span = node.meta.get("source")
    if span is None:
        return "# No stacktrace found for following nodes"
    return f"# File: {span.file}:{span.line} in {span.function}"


class CodeGen:
    """How a graph becomes Python source; subclass to change the function's signature, its
    return statement, or to rewrite its body (``Graph.set_codegen``).

    ``gen_fn_def`` writes the ``def`` line (and any unpacking after it), ``generate_output``
    the return statement; ``process_inputs``/``process_outputs`` convert between what the
    generated function is called with / returns and the graph's inputs / output value;
    ``additional_globals`` adds names the generated code refers to.
    """

    def __init__(self) -> None:
        #: the ``on_generate_code`` transformer: the body's lines -> new lines
        self._body_transformer: Callable[[list[str]], list[str]] | None = None
        self._func_name: str = "forward"
        self._render: Callable[[Any], str] = repr

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Argument) -> str:
        return f"return {self._render(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        return []

    def _gen_python_code(
        self,
        nodes: Iterable[Node],
        root_module: str,
        *,
        verbose: bool = False,
        wrap_fn: Any = None,
    ) -> PythonCode:
        return _generate(self, list(nodes), root_module, verbose=verbose, wrap_fn=wrap_fn)


class _PyTreeCodeGen(CodeGen):
    """Generated code for a graph whose inputs/outputs are containers' leaves: the function
    takes the containers and unpacks them (``fx_pytree.tree_flatten_spec``), and packs its
    result back (``pytree.tree_unflatten``)."""

    def __init__(self, pytree_info: PyTreeInfo) -> None:
        super().__init__()
        self.pytree_info = pytree_info

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        return _pytree_prologue(
            self._func_name, self.pytree_info, free_vars, maybe_return_annotation
        )

    def generate_output(self, output_args: Argument) -> str:
        if self.pytree_info.out_spec is None:
            return super().generate_output(output_args)
        return f"return pytree.tree_unflatten({self._render(output_args)}, self._out_spec)"

    def process_inputs(self, *args: Any) -> Any:
        return torch.utils._pytree.arg_tree_leaves(*args)

    def process_outputs(self, outputs: Any) -> Any:
        if self.pytree_info.out_spec is None:
            return outputs
        if not isinstance(outputs, list | tuple):
            outputs = [outputs]
        return torch.utils._pytree.tree_unflatten(outputs, self.pytree_info.out_spec)


def generate(
    nodes: Iterable[Node],
    root_module: str,
    *,
    verbose: bool = False,
    wrap_fn: Any = None,
    pytree_info: PyTreeInfo | None = None,
) -> PythonCode:
    codegen = CodeGen() if pytree_info is None else _PyTreeCodeGen(pytree_info)
    return codegen._gen_python_code(nodes, root_module, verbose=verbose, wrap_fn=wrap_fn)


def _generate(
    codegen: CodeGen,
    nodes: list[Node],
    root_module: str,
    *,
    verbose: bool,
    wrap_fn: Any,
    wrap_name_hint: str = "wrap",
) -> PythonCode:
    writer = _CodeWriter(codegen, nodes, root_module)
    saved = [(n, n._repr_fn) for n in nodes]
    node_repr = writer.node_repr
    for n in nodes:
        n._repr_fn = node_repr
    codegen._render = writer.get_repr
    try:
        writer.write_body(nodes, verbose=verbose)
        wrap_stmts = writer.wrap_statements(wrap_fn, wrap_name_hint)
        prologue = codegen.gen_fn_def(writer.free_vars, writer.return_annotation)
        body = writer.body
        if codegen._body_transformer is not None:
            body = codegen._body_transformer(body)
    finally:
        for n, fn in saved:
            n._repr_fn = fn
        codegen._render = repr
    return _assemble(body, prologue, wrap_stmts, writer.globals)


class _CodeWriter:
    """One generation of a graph's code: the names it gives (nodes, globals), the body's
    lines, and what the ``def`` line needs (free variables, return annotation).

    Names are given in the order things are printed, so every statement is built in the
    order torch.fx builds it: the node's annotation first, then the text left to right.
    """

    def __init__(self, codegen: CodeGen, nodes: list[Node], root_module: str) -> None:
        self.codegen = codegen
        self.root_module = root_module
        self.namespace = Namespace()
        self.globals: dict[str, Any] = {}
        self.free_vars: list[str] = []
        self.body: list[str] = []
        #: the wrapped functions the body calls (``wrap("name")`` statements), in order
        self.wrapped_fns: dict[str, None] = {}
        self.return_annotation = ""
        self.last_uses_of = _last_uses(nodes)
        self._add_builtins()

    def _add_builtins(self) -> None:
        pytree_info = (
            self.codegen.pytree_info if isinstance(self.codegen, _PyTreeCodeGen) else None
        )
        for builtin_name, obj in CUSTOM_BUILTINS.items():
            self.add_global(builtin_name, obj)
        if pytree_info is None:
            self.globals.pop("fx_pytree", None)
            self.globals.pop("pytree", None)
        else:
            self.globals["fx_pytree"] = _pytree
            self.globals["pytree"] = torch.utils._pytree
        for extra_name, extra_value in self.codegen.additional_globals():
            self.add_global(extra_name, extra_value)

    # -- names -------------------------------------------------------------------------
    def node_repr(self, n: Node) -> str:
        return self.namespace.create_name(n.name, n)

    def add_global(self, name_hint: str, obj: Any) -> str:
        if _is_from_torch(obj) and obj != torch.device:
            return _get_qualified_name(obj)
        name = self.namespace.create_name(name_hint, obj)
        if name in self.globals:
            if self.globals[name] is not obj:
                raise AssertionError(f"Global name {name} already assigned to different object")
            return name
        self.globals[name] = obj
        return name

    def type_repr(self, o: Any) -> str:
        if o == ():
            return "()"
        typename = _type_repr(o)
        if isinstance(o, types.UnionType) and "|" in typename:  # str | None
            return "|".join(self.type_repr(a) for a in typing.get_args(o))
        origin = getattr(o, "__origin__", None)
        if origin is not None:
            if isinstance(o, typing._GenericAlias):  # type: ignore[attr-defined]
                # typing.List[int]: print it as typing.List, not as the builtin list
                origin = _TYPING_ORIGINS.get(origin, origin)
            origin_name = self.add_global(_type_repr(origin), origin)
            type_args = typing.get_args(o)
            if type_args:
                return f"{origin_name}[{','.join(self.type_repr(a) for a in type_args)}]"
            return origin_name
        return self.add_global(typename, o)

    def get_repr(self, arg: Any) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            name = self.add_global(_get_qualified_name(type(arg)), type(arg))
            return f"{name}{tuple(arg)!r}"
        if isinstance(arg, torch._ops.OpOverload):
            return self.add_global(_get_qualified_name(arg), arg)
        if isinstance(arg, enum.Enum):
            cls = type(arg)
            return f"{self.add_global(cls.__name__, cls)}.{arg.name}"
        if isinstance(arg, torch.Tensor):
            dtype = str(arg.dtype).split(".")[-1]
            return f"torch.Tensor(size={list(arg.size())}, dtype={dtype})"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({self.get_repr(arg[0])},)"
            return "(" + ", ".join(self.get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(self.get_repr(a) for a in arg) + "]"
        if isinstance(arg, slice):
            start, stop, step = (self.get_repr(v) for v in (arg.start, arg.stop, arg.step))
            return f"slice({start}, {stop}, {step})"
        return repr(arg)

    def format_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        parts = [self.get_repr(a) for a in args]
        parts.extend(f"{k} = {self.get_repr(v)}" for k, v in kwargs.items())
        return ", ".join(parts)

    # -- the body ----------------------------------------------------------------------
    def write_body(self, nodes: list[Node], *, verbose: bool) -> None:
        """Each node's statement after a ``# COUNTER: i`` line (``_assemble`` maps lines
        to nodes by them), with its source comment when ``verbose``."""
        previous_comment = None
        for index, node in enumerate(nodes):
            if verbose and node.op not in ("placeholder", "output"):
                comment = _source_comment(node)
                if comment != previous_comment:
                    previous_comment = comment
                    self.body.append(f"\n{comment}\n")
            self.body.append(f"# COUNTER: {index}\n")
            self.emit(node)
            self.free_after(node)
        if not self.body:
            self.body.append("pass\n")

    def wrap_statements(self, wrap_fn: Any, wrap_name_hint: str) -> str:
        if not self.wrapped_fns:
            return ""
        wrap_name = self.add_global(wrap_name_hint, wrap_fn)
        return "\n".join(f'{wrap_name}("{name}")' for name in self.wrapped_fns)

    def free_after(self, user: Node) -> None:
        """End ``user``'s statement, freeing the values it used last (``;  x = None``)."""
        if user.op == "placeholder":
            return
        if user.op == "output":
            self.body.append("\n")
            return
        to_delete = list(self.last_uses_of.get(user, ()))
        if not user.users:
            to_delete.append(user)
        if to_delete:
            self.body.append(";  " + " = ".join([*(repr(n) for n in to_delete), "None"]) + "\n")
        else:
            self.body.append("\n")

    def emit(self, node: Node) -> None:
        """``node``'s statement, by its opcode (``_emit_<op>``)."""
        annotation = "" if node.type is None else f" : {self.type_repr(node.type)}"
        emit_op = getattr(self, f"_emit_{node.op}", None)
        if emit_op is None:
            raise NotImplementedError(f"node: {node.op} {node.target}")
        emit_op(node, annotation)

    def _emit_placeholder(self, node: Node, annotation: str) -> None:
        default = "" if not node.args else f" = {self.get_repr(node.args[0])}"
        self.free_vars.append(f"{node.target}{annotation}{default}")
        raw_name = node.target.replace("*", "")
        if raw_name != repr(node):
            self.body.append(f"{node!r} = {raw_name}\n")

    def _emit_call_method(self, node: Node, annotation: str) -> None:
        self.body.append(
            f"{node!r}{annotation} = {format_target(self.get_repr(node.args[0]), node.target)}"
            f"({self.format_args(node.args[1:], node.kwargs)})"
        )

    def _emit_call_function(self, node: Node, annotation: str) -> None:
        if self._emit_operator(node, annotation):
            return
        target = node.target
        global_name = self.add_global(_get_qualified_name(target), target)
        if (
            global_name == "getattr"
            and isinstance(node.args, tuple)
            and len(node.args) == 2
            and isinstance(node.args[1], str)
            and node.args[1].isidentifier()
        ):
            self.body.append(
                f"{node!r}{annotation} = {format_target(self.get_repr(node.args[0]), node.args[1])}"
            )
            return
        self.body.append(
            f"{node!r}{annotation} = {global_name}({self.format_args(node.args, node.kwargs)})"
        )
        if node.meta.get("is_wrapped", False):
            self.wrapped_fns.setdefault(global_name)

    def _emit_operator(self, node: Node, annotation: str) -> bool:
        """A call of an ``operator`` function written as its operator (``a + b``,
        ``a[i]``, ``a += b``); False if the target is no such function."""
        if getattr(node.target, "__module__", "") != "_operator":
            return False
        fn_name = getattr(node.target, "__name__", "")
        if fn_name in magic_methods:
            rendered = magic_methods[fn_name].format(*(self.get_repr(a) for a in node.args))
            self.body.append(f"{node!r}{annotation} = {rendered}")
            return True
        if fn_name in inplace_methods:
            rendered = inplace_methods[fn_name].format(*(self.get_repr(a) for a in node.args))
            self.body.append(f"{rendered};  {node!r}{annotation} = {self.get_repr(node.args[0])}")
            return True
        return False

    def _emit_call_module(self, node: Node, annotation: str) -> None:
        self.body.append(
            f"{node!r}{annotation} = {format_target(self.root_module, node.target)}"
            f"({self.format_args(node.args, node.kwargs)})"
        )

    def _emit_get_attr(self, node: Node, annotation: str) -> None:
        self.body.append(f"{node!r}{annotation} = {format_target(self.root_module, node.target)}")

    def _emit_output(self, node: Node, annotation: str) -> None:
        if node.type is not None:
            self.return_annotation = f" -> {self.type_repr(node.type)}"
        self.body.append(self.codegen.generate_output(node.args[0]))


def _last_uses(nodes: list[Node]) -> dict[Node, list[Node]]:
    """node -> the inputs it is the last user of (freed right after its statement)."""
    last_uses_of: dict[Node, list[Node]] = {}
    seen: set[Node] = set()
    for node in reversed(nodes):
        for input_node in node._input_nodes:
            if input_node not in seen:
                seen.add(input_node)
                last_uses_of.setdefault(node, []).append(input_node)
    return last_uses_of


def _assemble(
    body: list[str], prologue: str, wrap_stmts: str, globals_: dict[str, Any]
) -> PythonCode:
    """The function's source: the ``wrap`` statements, the ``def`` and the indented body;
    the ``# COUNTER: i`` lines become the map from a source line to node ``i``."""
    lineno_map: dict[int, int | None] = {}
    prologue_len = prologue.count("\n") + 1
    lines: list[str] = []
    current: int | None = None
    for line in "".join(body).split("\n"):
        counter = _COUNTER.search(line)
        if counter is not None:
            current = int(counter.group(1))
        else:
            lineno_map[len(lines) + prologue_len] = current
            lines.append(line)
    code = "\n".join(lines).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    src = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
    return PythonCode(src, globals_, lineno_map, wrap_stmts.count("\n") + 4)


def _pytree_prologue(
    func_name: str, info: PyTreeInfo, free_vars: list[str], return_annotation: str
) -> str:
    """``def forward(self, x, d):`` plus the line that unpacks the arguments' leaves."""
    fn_args = list(info.orig_args)
    if fn_args and fn_args[0] == "self":
        free_vars.insert(0, "self")
    params = fn_args if fn_args and fn_args[0] == "self" else ["self", *fn_args]
    prologue = f"def {func_name}({', '.join(params)}){return_annotation}:"
    if not free_vars:
        return prologue
    signature = f"[{', '.join(fn_args)}], self._in_spec"
    if _pytree.is_args_kwargs_spec(info.in_spec):
        count = info.in_spec.child(0).num_children
        kwargs = ", ".join(
            f"'{k}':{v}"
            for k, v in zip(info.in_spec.child(1).context, info.orig_args[count:], strict=False)
        )
        signature = f"([{', '.join(info.orig_args[:count])}], {{{kwargs}}}), self._in_spec"
    annotated = [v for v in free_vars if ":" in v]
    if annotated:
        # ``a: T, b: U = f()`` is not Python: annotate first, then unpack
        prologue += "\n    " + "".join(v + "; " for v in annotated) + "\n"
    targets = ", ".join(v.split(":")[0].split("#")[0] for v in free_vars)
    return prologue + f"\n    {targets}, = fx_pytree.tree_flatten_spec({signature})"
