"""Graph: the IR — a circular doubly-linked list of Nodes around a sentinel root."""

from __future__ import annotations

import copy
import functools
import inspect
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

import torch

from fxcore import source
from fxcore._codegen import (
    CodeGen,
    PythonCode,
    _PyTreeCodeGen,
    magic_methods,
    reflectable_magic_methods,
)
from fxcore._naming import Namespace, is_magic, snake_case
from fxcore._pytree import PyTreeInfo
from fxcore._wrap_registry import wrap
from fxcore.immutable_collections import immutable_dict
from fxcore.node import OPCODES, Argument, Node, Target, map_arg
from fxcore.source import record_source

if TYPE_CHECKING:
    from fxcore.graph_module import GraphModule

__all__ = ["CodeGen", "Graph", "PythonCode", "magic_methods", "reflectable_magic_methods"]

_LEGAL_OPS = frozenset(op for op in OPCODES if op != "root")


class _NodeList:
    """The graph's nodes in order (``reversed`` works too); a live view."""

    __slots__ = ("_direction", "_graph")

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        direction = self._direction
        current = getattr(root, direction)
        while current is not root:
            following = getattr(current, direction)
            if not current._erased:
                yield current
            current = following

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph: Graph, insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.previous, graph._insert = graph._insert, insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self.graph._insert = self.previous


class Graph:
    """Nodes in program order; builds, edits, checks and prints them as Python code."""

    def __init__(
        self,
        owning_module: GraphModule | None = None,
        tracer_cls: type | None = None,
        tracer_extras: dict[str, Any] | None = None,
    ) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._co_fields: dict[str, Any] = {}
        self._codegen: CodeGen = CodeGen()
        self._order_cache: dict[Node, int] | None = None

    # -- basics ------------------------------------------------------------------------
    @property
    def owning_module(self) -> GraphModule | None:
        return self._owning_module

    @owning_module.setter
    def owning_module(self, module: GraphModule | None) -> None:
        self._owning_module = module

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def _order_of(self, node: Node) -> int:
        return next(i for i, n in enumerate(self.nodes) if n is node)

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list[Node]:
        found = [n for n in self.nodes if n.op == op and (target is None or n.target == target)]
        return found

    def output_node(self) -> Node:
        for node in reversed(self.nodes):
            if node.op == "output":
                return node
        raise RuntimeError("graph has no output node")

    # -- building ----------------------------------------------------------------------
    def create_node(
        self,
        op: str,
        target: Target,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        if op not in _LEGAL_OPS:
            raise AssertionError(f"op '{op}' is not in _legal_ops")
        if not args:
            args = ()
        elif not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        if not kwargs:
            kwargs = immutable_dict()
        elif not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        unique = self._graph_namespace.create_name(candidate, None)
        node = Node(self, unique, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(unique, node)
        self._insert(node)
        self._len += 1
        record_source(node)
        return node

    def _target_to_str(self, target: Target | None) -> str:
        try:
            return _name_of_target(target)
        except TypeError:  # unhashable
            return _name_of_target.__wrapped__(target)

    def placeholder(
        self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty
    ) -> Node:
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        owner = self.owning_module
        if owner is not None and not _is_module_state(owner, qualified_name):
            warnings.warn(
                "Attempted to insert a get_attr Node with no underlying reference in the "
                "owning GraphModule! Call GraphModule.add_submodule to add the necessary "
                "submodule, GraphModule.add_parameter to add the necessary Parameter, or "
                "nn.Module.register_buffer to add the necessary buffer",
                stacklevel=2,
            )
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(
        self,
        module_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        owner = self.owning_module
        if owner is not None:
            owner.get_submodule(module_name)  # AttributeError if there is no such submodule
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(
        self,
        method_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(
        self,
        the_function: Callable[..., Any],
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
        name: str | None = None,
    ) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, name, type_expr)

    def create_size_node(self, tensor_node: Node, dim: int) -> Node:
        """A node computing ``tensor_node.size(dim)`` (``aten.sym_size.int``)."""
        return self._tensor_property_node(
            torch.ops.aten.sym_size.int, tensor_node, (dim,), lambda t: t.size(dim)
        )

    def create_stride_node(self, tensor_node: Node, dim: int) -> Node:
        """A node computing ``tensor_node.stride(dim)`` (``aten.sym_stride.int``)."""
        return self._tensor_property_node(
            torch.ops.aten.sym_stride.int, tensor_node, (dim,), lambda t: t.stride(dim)
        )

    def create_storage_offset_node(self, tensor_node: Node) -> Node:
        """A node computing ``tensor_node.storage_offset()``."""
        return self._tensor_property_node(
            torch.ops.aten.sym_storage_offset.default,
            tensor_node,
            (),
            lambda t: t.storage_offset(),
        )

    def _tensor_property_node(
        self,
        op: Callable[..., Any],
        tensor_node: Node,
        extra_args: tuple[Any, ...],
        read: Callable[[torch.Tensor], Any],
    ) -> Node:
        node = self.call_function(op, (tensor_node, *extra_args))
        # the example value, when the tensor node has one, gets its counterpart
        for key in ("val", "example_value"):
            if key in tensor_node.meta:
                node.meta[key] = read(tensor_node.meta[key])
                break
        return node

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(
        self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
    ) -> Node:
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copied = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copied.meta = copy.copy(node.meta)
        return copied

    def graph_copy(
        self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False
    ) -> Argument:
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                result = map_arg(node.args[0], lambda n: val_map[n])
                return (result, node) if return_output_node else result
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Graph:
        memo = memo if memo is not None else {}
        copied = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = copied
        output_vals = copied.graph_copy(self, val_map=memo, return_output_node=True)
        copied._co_fields = dict(self._co_fields)
        copied._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            value, old_output = output_vals
            new_output = copied.output(value, type_expr=getattr(old_output, "type", None))
            new_output.meta = copy.copy(old_output.meta)
        return copied

    # -- editing -----------------------------------------------------------------------
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        if to_erase.users:
            raise RuntimeError(
                f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                f"users in the graph: {to_erase.users}!"
            )
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        self._graph_namespace.forget(to_erase)
        to_erase._drop_inputs()

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        self.lint()
        impure = is_impure_node if is_impure_node is not None else Node.is_impure
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    # -- checking ----------------------------------------------------------------------
    def lint(self) -> None:
        """Check opcodes, ownership, topological order, unique names and reachable targets."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in _LEGAL_OPS:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' does not belong to this Graph, "
                        "but was used as an argument! If you are copying nodes from another "
                        "graph, make sure to use ``arg_transform`` on node_copy() to remap "
                        f"values\n{self}"
                    )
                if arg not in seen_values:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' was used before it has been "
                        "defined! Please check that Nodes in the graph are topologically "
                        f"ordered\n{self}"
                    )
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        owner = self.owning_module
        if not owner:
            return
        for node in self.nodes:
            if node.op == "call_function":
                if not callable(node.target):
                    raise ValueError(
                        f"Node {node} target {node.target} has type "
                        f"{torch.typename(node.target)} but a Callable is expected"
                    )
            elif not isinstance(node.target, str):
                raise ValueError(
                    f"Node {node} target {node.target} has type {torch.typename(node.target)} "
                    "but a str is expected"
                )
            if node.op in ("get_attr", "call_module"):
                atoms = node.target.split(".")
                current: Any = owner
                for i, atom in enumerate(atoms):
                    following = getattr(current, atom, None)
                    seen_qualname = ".".join(atoms[:i])
                    if following is None:
                        raise RuntimeError(
                            f"Node {node} target {node.target} references nonexistent "
                            f"attribute {atom} of {seen_qualname}"
                        )
                    if node.op == "call_module" and not isinstance(following, torch.nn.Module):
                        raise RuntimeError(
                            f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                            "not reference an nn.Module"
                        )
                    current = following

    # -- printing ----------------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose: bool = False, **_: Any) -> PythonCode:
        return self._codegen._gen_python_code(
            self.nodes, root_module, verbose=verbose, wrap_fn=wrap
        )

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def on_generate_code(
        self,
        make_transformer: Callable[
            [Callable[[list[str]], list[str]] | None], Callable[[list[str]], list[str]]
        ],
    ) -> AbstractContextManager[None]:
        """Rewrite the generated body's lines from now on: ``make_transformer`` gets the
        transformer in place (or None) and returns the new one. Used as a context manager,
        the previous transformer comes back on exit."""
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextmanager
        def restoring() -> Iterator[None]:
            try:
                yield
            finally:
                self._codegen._body_transformer = previous

        return restoring()

    @property
    def _pytree_info(self) -> PyTreeInfo | None:
        """Set when the inputs are containers (concrete_args with PH inside a dict or list)."""
        codegen = self._codegen
        return codegen.pytree_info if isinstance(codegen, _PyTreeCodeGen) else None

    @_pytree_info.setter
    def _pytree_info(self, info: PyTreeInfo | None) -> None:
        transformer = self._codegen._body_transformer
        self._codegen = CodeGen() if info is None else _PyTreeCodeGen(info)
        self._codegen._body_transformer = transformer

    def process_inputs(self, *args: Any) -> Any:
        """Generated code's arguments -> the graph's inputs (the leaves, for containers)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        """The graph's output -> what generated code returns (rebuilt containers)."""
        return self._codegen.process_outputs(out)

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        # like torch.fx, the return type is not collected here, so it never prints
        return_typename = [""]
        lines = [n.format_node(placeholder_names) for n in self.nodes]
        text = f"graph({', '.join(placeholder_names)}){return_typename[0]}:"
        for line in lines:
            if line:
                text += "\n    " + line
        return text

    def print_tabular(self) -> None:
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
        except ImportError:
            widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(5)]
            for row in [headers, ["-" * w for w in widths], *rows]:
                print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
            return
        print(tabulate(rows, headers=headers))

    @contextmanager
    def _recording_off(self) -> Iterator[None]:
        previous, source.record_sources = source.record_sources, False
        try:
            yield
        finally:
            source.record_sources = previous


@functools.lru_cache(maxsize=4096)
def _name_of_target(target: Target | None) -> str:
    """A node's default name: the target's name in snake case (``__add__`` -> ``add``)."""
    if callable(target):
        op = target.__name__
    else:
        op = str(target)
        if is_magic(op):
            op = op[2:-2]
    return snake_case(op)


def _is_module_state(module: torch.nn.Module, qualified_name: str) -> bool:
    """Whether ``qualified_name`` names a submodule, parameter or buffer of ``module``."""
    module_path, _, name = qualified_name.rpartition(".")
    try:
        owner = module.get_submodule(module_path)
    except AttributeError:
        warnings.warn(f"Failed to fetch module {module_path}!", stacklevel=3)
        return False
    if not hasattr(owner, name):
        return False
    value = getattr(owner, name)
    return isinstance(value, torch.nn.Module | torch.nn.Parameter) or name in owner._buffers
