"""Node: one operation of a Graph, with use-def links kept right on every argument change."""

from __future__ import annotations

import builtins
import inspect
import operator
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from fxcore.immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from fxcore.graph import Graph

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Target = Callable[..., Any] | str
Argument = Any

OPCODES = (
    "placeholder",
    "call_method",
    "call_module",
    "call_function",
    "get_attr",
    "output",
    "root",
)


def _ops_that_exist(*paths: str) -> list[Callable[..., Any]]:
    """The ``torch.ops`` overloads among ``paths`` ("aten._assert_scalar.default"...)."""
    found = []
    for path in paths:
        value: Any = torch.ops
        try:
            for atom in path.split("."):
                value = getattr(value, atom)
        except (AttributeError, RuntimeError):
            continue
        found.append(value)
    return found


#: calls that dead code elimination keeps although nothing uses their result
_side_effectful_functions: set[Callable[..., Any]] = {
    torch._assert,
    operator.setitem,
    torch._C._set_grad_enabled,
    torch.amp._enter_autocast,
    torch.amp._exit_autocast,
    *_ops_that_exist(
        "aten._assert_async.msg",
        "aten._assert_scalar.default",
        "aten._assert_tensor_metadata.default",
        "aten.sym_constrain_range.default",
        "aten.sym_constrain_range_for_size.default",
        "profiler._record_function_enter",
        "profiler._record_function_enter.default",
        "profiler._record_function_enter_new",
        "profiler._record_function_enter_new.default",
        "profiler._record_function_exit",
        "profiler._record_function_exit._RecordFunction",
        "inductor.accumulate_grad_.default",
        "inductor.resize_storage_bytes_.default",
    ),
}
if hasattr(torch, "_assert_async"):
    _side_effectful_functions.add(torch._assert_async)

#: random functions change the global RNG state, so calling them is a side effect
_RANDOM_FUNCTIONS: frozenset[Callable[..., Any]] = frozenset(
    {
        torch.rand,
        torch.randn,
        torch.randint,
        torch.randperm,
        torch.rand_like,
        torch.randn_like,
        torch.randint_like,
        torch.normal,
        torch.poisson,
        torch.bernoulli,
        torch.multinomial,
    }
)


def _is_impure_call(fn: Any, impure_random: bool) -> bool:
    """Whether calling ``fn`` has an effect beyond its result (so DCE must keep it)."""
    try:
        if fn in _side_effectful_functions or fn in _RANDOM_FUNCTIONS:
            return True
    except TypeError:  # unhashable callable
        return False
    if isinstance(fn, torch._ops.OpOverloadPacket):
        default = getattr(fn, "default", None)
        return default is not None and _is_impure_call(default, impure_random)
    if impure_random and getattr(fn, "_nondeterministic_seeded", False):
        return True
    schema = getattr(fn, "_schema", None)
    return schema is not None and bool(getattr(schema, "is_mutable", False))


def has_side_effect(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` so that dead code elimination keeps calls to it."""
    _side_effectful_functions.add(fn)
    return fn


def _type_repr(obj: object) -> str:
    if isinstance(obj, type) and not isinstance(obj, types.GenericAlias):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _module_of(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None)
    if module is not None:
        return module
    name = fn.__name__
    for candidate in (torch, torch.nn.functional):
        if getattr(candidate, name, None) is fn:
            return candidate.__name__
    raise RuntimeError(f"cannot find module for {fn}")


def _get_qualified_name(fn: Callable[..., Any]) -> str:
    """The dotted name generated code uses to refer to ``fn`` (e.g. ``torch.relu``)."""
    name = fn.__name__
    if getattr(builtins, name, None) is fn:
        return name
    if (
        isinstance(fn, types.MethodDescriptorType | types.WrapperDescriptorType)
        and fn is getattr(torch.Tensor, name, None)
    ) or (
        getattr(fn, "__module__", None) == "torch._tensor"
        and getattr(fn, "__qualname__", None) == f"Tensor.{name}"
    ):
        return f"torch.Tensor.{name}"
    if name == "<lambda>":
        try:
            name = inspect.getsource(fn).split("=")[0].strip()
        except Exception as error:
            raise RuntimeError("Unable to represent lambda") from error
    module = _module_of(fn).replace("torch._ops", "torch.ops")
    if module == "torch" and name == "segment_reduce":
        name = "_" + name
    return f"{module}.{name}"


def _format_arg(arg: object, max_list_len: float = float("inf")) -> str:
    custom_repr = getattr(type(arg), "_custom_fx_repr_fn", None)
    if custom_repr is not None:  # a type that prints itself (a NamedTuple, say)
        return custom_repr(arg)
    if isinstance(arg, list | tuple):
        inner = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        if isinstance(arg, list):
            return f"[{inner}{more}]"
        return f"({inner}{',' if len(arg) == 1 else ''}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation: ``op`` says what kind, ``target`` what is called, args/kwargs with what.

    ``users`` and ``all_input_nodes`` follow ``args``/``kwargs`` automatically. Nodes live in
    their graph's circular doubly-linked list (``prev``/``next``).
    """

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        return_type: Any | None = None,
    ) -> None:
        if op not in OPCODES:
            raise AssertionError(f"op '{op}' is not in _legal_ops")
        if op == "call_function":
            if not callable(target):
                raise ValueError(
                    f"Node [graph = {graph}, name = '{name}'] target {target} "
                    f"has type {torch.typename(target)} but a Callable is expected"
                )
        elif op != "root" and not isinstance(target, str):
            raise ValueError(
                f"Node [graph = {graph}, name = '{name}'] target {target} "
                f"has type {torch.typename(target)} but a str is expected"
            )
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._repr_fn: Callable[[Node], str] | None = None
        self.meta: dict[str, Any] = {}
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = immutable_dict()
        self._update_args_kwargs(args, kwargs)

    # -- the linked list ---------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move or insert ``x`` right before this node."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move or insert ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def __lt__(self, other: Node) -> bool:
        return self.graph._order_of(self) < self.graph._order_of(other)

    def __gt__(self, other: Node) -> bool:
        return self.graph._order_of(self) > self.graph._order_of(other)

    # -- arguments and use-def ---------------------------------------------------------
    @property
    def args(self) -> tuple[Argument, ...]:
        return self._args

    @args.setter
    def args(self, value: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        if not 0 <= idx <= len(self.args):
            raise AssertionError("insert_args index must be between 0 and len(self.args)")
        self.args = (*self.args[:idx], arg, *self.args[idx:])

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: Any, new_kwargs: Any) -> None:
        self._set_inputs(new_args, new_kwargs, None, None)

    def _set_inputs(self, new_args: Any, new_kwargs: Any, old: Node | None, new: Any) -> None:
        """args and kwargs := ``new_args``/``new_kwargs`` with node ``old`` (if given) replaced
        by ``new``, in one pass; this node moves to the end of each input's ``users``."""
        for old_input in self._input_nodes:
            old_input.users.pop(self, None)
        inputs: dict[Node, None] = {}
        self._input_nodes = inputs
        if type(new_args) is tuple:  # the common case, without a call per element
            args: list[Argument] = []
            for arg in new_args:
                cls = type(arg)
                if cls is Node:
                    if arg is old:
                        arg = new
                    inputs[arg] = None  # re-assigning keeps first-use order
                    arg.users[self] = None
                elif cls not in _LEAF_TYPES:
                    arg = map_arg(arg, self._registrar(inputs, old, new))
                args.append(arg)
            self._args = tuple(args)
        else:
            self._args = map_arg(new_args, self._registrar(inputs, old, new))
        if new_kwargs:
            self._kwargs = map_arg(new_kwargs, self._registrar(inputs, old, new))
        else:
            self._kwargs = _NO_KWARGS

    def _registrar(
        self, inputs: dict[Node, None], old: Node | None, new: Any
    ) -> Callable[[Node], Node]:
        def register(n: Node) -> Node:
            if n is old:
                n = new
            inputs[n] = None
            n.users[self] = None
            return n

        return register

    def _drop_inputs(self) -> None:
        """Every node in args/kwargs becomes None (an erased node uses nothing)."""
        for old_input in self._input_nodes:
            old_input.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(self._args, _to_none)
        self._kwargs = map_arg(self._kwargs, _to_none) if self._kwargs else _NO_KWARGS

    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] | None = None,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user (for which ``delete_user_cb`` says yes) use ``replace_with``."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError(
                    "Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                    "but replace_with already has .meta keys"
                )
            replace_with.meta.update(self.meta)
        replaced = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            user._replace_input(self, replace_with)
            replaced.append(user)
        return replaced

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        self._replace_input(old_input, new_input)

    def _replace_input(self, old: Node, new: Node) -> None:
        self._set_inputs(self._args, self._kwargs, old, new)

    def normalized_arguments(
        self,
        root: torch.nn.Module,
        arg_types: tuple[Any, ...] | None = None,
        kwarg_types: dict[str, Any] | None = None,
        normalize_to_only_use_kwargs: bool = False,
    ) -> Any:
        """This call's arguments matched to its target's signature (an ``ArgsKwargsPair``), or
        ``None``; see ``fxcore.operator_schemas.normalize_function``/``normalize_module``."""
        from fxcore.operator_schemas import normalize_function, normalize_module

        if self.op == "call_function":
            return normalize_function(
                self.target,  # type: ignore[arg-type]
                self._args,
                self._kwargs,
                arg_types,
                kwarg_types,
                normalize_to_only_use_kwargs=normalize_to_only_use_kwargs,
            )
        if self.op == "call_module":
            return normalize_module(
                root,
                self.target,  # type: ignore[arg-type]
                self._args,
                self._kwargs,
                normalize_to_only_use_kwargs=normalize_to_only_use_kwargs,
            )
        return None

    # -- properties --------------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return bool(getattr(owner.get_submodule(self.target), "_is_impure", False))
        if self.op == "call_function":
            return _is_impure_call(self.target, impure_random)
        return False

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)

    # -- printing ----------------------------------------------------------------------
    def __repr__(self) -> str:
        if self._repr_fn is not None:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target: object) -> str:
        if isinstance(target, str):
            return target
        module = getattr(target, "__module__", None)
        name = getattr(target, "__name__", None)
        if module is not None and name is not None:
            if module == "builtins":
                return f"builtins.{name}"
            if module == "_operator":
                return f"operator.{name}"
        return _get_qualified_name(target)  # type: ignore[arg-type]

    def format_node(
        self,
        placeholder_names: list[str] | None = None,
        maybe_return_typename: list[str] | None = None,
        *,
        include_tensor_metadata: bool = False,
    ) -> str | None:
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            if placeholder_names:  # torch.fx tests truthiness: an empty list prints fully
                arg = self.target + (f": {_type_repr(self.type)}" if self.type else "")
                placeholder_names.append(str(arg))
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = f"(default={self.args[0]})" if self.args else ""
            return (
                f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"placeholder[target={self.target}]{default}"
            )
        if self.op == "get_attr":
            return (
                f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"get_attr[target={self._pretty_print_target(self.target)}]"
            )
        if self.op == "output":
            if self.type and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (
            f"%{self.name} : {typename}[num_users={len(self.users)}] = "
            f"{self.op}[target={self._pretty_print_target(self.target)}]("
            f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"
        )


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every Node inside ``a`` (tuples, lists, dicts, slices), rebuilding it."""
    cls = type(a)
    if cls is Node:
        return fn(a)
    if cls is tuple:
        return tuple(_map_elements(a, fn))
    if cls is list or cls is immutable_list:
        return immutable_list(_map_elements(a, fn))
    if cls is dict or cls is immutable_dict:
        return immutable_dict([(k, map_arg(v, fn)) for k, v in a.items()])
    if cls in _LEAF_TYPES:
        return a
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


_LEAF_TYPES = frozenset({int, float, str, bool, type(None), complex})
_NO_KWARGS: immutable_dict = immutable_dict()


def _to_none(_node: Node) -> None:
    return None


def _map_elements(elements: Any, fn: Callable[[Node], Argument]) -> list[Argument]:
    """``map_arg`` of each element, nodes and plain values handled without recursing."""
    mapped: list[Argument] = []
    for elem in elements:
        cls = type(elem)
        if cls is Node:
            elem = fn(elem)
        elif cls not in _LEAF_TYPES:
            elem = map_arg(elem, fn)
        mapped.append(elem)
    return mapped


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a``; lists and dicts come back immutable."""
    cls = type(a)
    if cls is tuple:
        return tuple(map_aggregate(elem, fn) for elem in a)
    if cls is list or cls is immutable_list:
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if cls is dict or cls is immutable_dict:
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, tuple):
        mapped = [map_aggregate(elem, fn) for elem in a]
        return cls(*mapped) if hasattr(a, "_fields") else cls(mapped)
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        result = immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
        return result
    if cls is slice:
        return slice(
            map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn)
        )
    return fn(a)
