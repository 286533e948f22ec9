"""A graph torch made, as JSON data (``describe``), and back as a GraphModule over tensors
of the same metadata (``rebuild``): what the replay runs through export or dynamo again so
that the fake-tensor cache gets the keys the job's own run made.

Only data crosses: operators by their names in ``torch.ops`` or in a fixed set of public
namespaces, tensor metadata, constants. The data comes from a job, which ran the user's
code, and is replayed in a process not yet confined to a job's policy, so ``rebuild``
checks everything it reads and calls nothing but tensor operations: ATen and prims
operators, the functions and ``Tensor`` methods torch lets tensors override (its
``__torch_function__`` table: no ``torch.load``, ``torch.save`` or ``torch.compile``), and
operator's arithmetic; a method is called as ``torch.Tensor``'s own function, so nothing
that is not a tensor (an array ``numpy()`` made) has a method called. No value it builds
is a function. Anything else raises ``Undescribable``, as ``describe`` does for a graph it
cannot say (symbolic sizes, non-tensor inputs, higher-order operators).
"""

from __future__ import annotations

import functools
import math
import operator
import re
from typing import Any

import torch
from torch import nn

#: a graph's nodes at most (a 5,000-node model fits)
MAX_NODES = 20_000
#: the bytes of the tensors a rebuilt graph allocates at most (export touches none of them,
#: dynamo runs the graph on them)
MAX_TENSOR_BYTES = 1 << 30
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,80}")
#: an ATen operator's name or overload (``_to_copy``, ``_assert_tensor_metadata``; no dunder)
_OP_NAME = re.compile(r"_?[A-Za-z][A-Za-z0-9_]{0,80}")
#: namespaces a dynamo graph's functions come from, by the name ``describe`` writes
_NAMESPACES: dict[str, Any] = {
    "torch": torch, "torch.nn.functional": torch.nn.functional, "torch._C._nn": torch._C._nn,
    "torch.functional": torch.functional, "operator": operator,
}
_OPS_NAMESPACES = ("aten", "prims")
#: operator's functions a graph may call (never ``attrgetter``, ``methodcaller``, ``call``)
_OPERATORS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs",
    "invert", "and_", "or_", "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge",
    "not_", "truth", "getitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod",
    "ipow", "imatmul", "iand", "ior", "ixor", "index", "concat"})
_DTYPES = {str(value).removeprefix("torch."): value for value in vars(torch).values()
           if isinstance(value, torch.dtype)}
_LAYOUTS = {"strided": torch.strided}
_MEMORY_FORMATS = {name: getattr(torch, name) for name in (
    "contiguous_format", "channels_last", "channels_last_3d", "preserve_format")}


class Undescribable(ValueError):
    """A graph or a description outside what the replay reproduces."""


Kinds = dict[str, str]  # placeholder name -> "param" | "buffer" | "input"


def describe(gm: torch.fx.GraphModule, kinds: Kinds | None = None) -> list[dict[str, Any]]:
    """``gm``'s nodes as data; ``kinds`` says which placeholders are parameters and buffers
    (export lifts them; a dynamo graph's are inputs)."""
    kinds = kinds or {}
    index: dict[torch.fx.Node, int] = {}
    nodes: list[dict[str, Any]] = []
    for node in gm.graph.nodes:
        index[node] = len(index)
        if node.op == "placeholder":
            nodes.append({"op": "input", "kind": kinds.get(node.name, "input"),
                          **_tensor(node.meta.get("val", node.meta.get("example_value")))})
        elif node.op == "call_function":
            nodes.append({"op": "function", "target": _function_name(node.target),
                          "args": _arg(node.args, index), "kwargs": _arg(node.kwargs, index)})
        elif node.op == "call_method" and isinstance(node.target, str):
            nodes.append({"op": "method", "target": node.target,
                          "args": _arg(node.args, index), "kwargs": _arg(node.kwargs, index)})
        elif node.op == "output":
            nodes.append({"op": "output", "args": _arg(node.args, index)})
        else:
            raise Undescribable(f"a {node.op} node")
    return nodes


def _tensor(value: Any) -> dict[str, Any]:
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        raise Undescribable("an input that is not a dense tensor")
    if not all(isinstance(n, int) for n in (*value.shape, *value.stride())):
        raise Undescribable("symbolic sizes")
    return {"shape": list(value.shape), "stride": list(value.stride()),
            "dtype": str(value.dtype).removeprefix("torch."), "grad": bool(value.requires_grad)}


def _function_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        namespace, _, name = target._schema.name.partition("::")
        return f"ops:{namespace}.{name}.{target._overloadname or 'default'}"
    name = getattr(target, "__name__", None)
    for public, namespace in _NAMESPACES.items():
        if isinstance(name, str) and getattr(namespace, name, None) is target:
            return f"{public}:{name}"
    raise Undescribable(f"the function {target!r}")


def _arg(value: Any, index: dict[torch.fx.Node, int]) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"node": index[value]}
    if isinstance(value, list | tuple):
        return {"list" if isinstance(value, list) else "tuple": [_arg(v, index) for v in value]}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise Undescribable("a dict with keys that are not names")
        return {"dict": {key: _arg(v, index) for key, v in value.items()}}
    if isinstance(value, slice):
        return {"slice": [_arg(v, index) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    if value is None or isinstance(value, bool | int | float | str):
        return {"value": value}
    raise Undescribable(f"an argument of type {type(value).__name__}")


def rebuild(nodes: Any, zeroed: bool = True
            ) -> tuple[torch.fx.GraphModule, tuple[torch.Tensor, ...]]:
    """The graph ``describe`` gave, over tensors of its inputs' metadata (parameters and
    buffers on the module), and its inputs; ``zeroed`` for a graph that will run on them
    (not for export, which only reads their metadata: their memory is never touched)."""
    if not isinstance(nodes, list) or not 0 < len(nodes) <= MAX_NODES:
        raise Undescribable("not a list of nodes")
    graph, root = torch.fx.Graph(), nn.Module()
    made: list[Any] = []
    inputs: list[torch.Tensor] = []
    budget = [MAX_TENSOR_BYTES]
    for position, node in enumerate(nodes):
        op = _field(node, "op", str)
        if op == "input":
            tensor = _tensor_like(node, budget, zeroed)
            kind = _field(node, "kind", str)
            if kind == "param":
                root.register_parameter(f"p{position}", nn.Parameter(tensor, node["grad"]))
                made.append(graph.get_attr(f"p{position}"))
            elif kind == "buffer":
                root.register_buffer(f"p{position}", tensor)
                made.append(graph.get_attr(f"p{position}"))
            else:
                inputs.append(tensor.requires_grad_(node["grad"]))
                made.append(graph.placeholder(f"x{position}"))
        elif op in ("function", "method"):
            target = _field(node, "target", str)
            args, kwargs = _value(node.get("args"), made), _value(node.get("kwargs"), made)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict):
                raise Undescribable("a call's arguments")
            function = _resolve(target) if op == "function" else _method(target)
            made.append(graph.call_function(function, args, kwargs))
        elif op == "output":
            args = _value(node.get("args"), made)
            if not isinstance(args, tuple) or len(args) != 1:
                raise Undescribable("the output")
            graph.output(args[0])
            made.append(None)
        else:
            raise Undescribable(f"a node {op!r}")
    return torch.fx.GraphModule(root, graph), tuple(inputs)


def _field(node: Any, name: str, kind: type) -> Any:
    value = node.get(name) if isinstance(node, dict) else None
    if not isinstance(value, kind):
        raise Undescribable(f"a node without {name}")
    return value


def _tensor_like(node: dict[str, Any], budget: list[int], zeroed: bool) -> torch.Tensor:
    shape, stride = node.get("shape"), node.get("stride")
    dtype = _DTYPES.get(node.get("dtype"))  # type: ignore[arg-type]
    if (dtype is None or not isinstance(node.get("grad"), bool)
            or not _ints(shape) or not _ints(stride) or len(shape) != len(stride)):
        raise Undescribable("an input's metadata")
    extent = 1 + sum((size - 1) * step for size, step in zip(shape, stride, strict=True)) \
        if all(shape) else 0
    budget[0] -= extent * dtype.itemsize
    if budget[0] < 0:
        raise Undescribable("inputs over the size bound")
    tensor = torch.empty_strided(shape, stride, dtype=dtype)  # not a view: torch's cache
    return tensor.zero_() if zeroed else tensor  # skips some operators on views


def _ints(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= 16 and all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 40 for n in value)


def _resolve(name: str) -> Any:
    public, _, attribute = name.partition(":")
    if public == "ops":
        parts = attribute.split(".")
        if len(parts) != 3 or parts[0] not in _OPS_NAMESPACES or not all(
                _OP_NAME.fullmatch(part) for part in parts):
            raise Undescribable(f"the operator {attribute!r}")
        try:
            overload = getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
        except (AttributeError, RuntimeError) as error:
            raise Undescribable(f"the operator {attribute!r}") from error
        if not isinstance(overload, torch._ops.OpOverload):
            raise Undescribable(f"the operator {attribute!r}")
        return overload
    namespace = _NAMESPACES.get(public)
    found = getattr(namespace, attribute, None) if namespace is not None and _NAME.fullmatch(
        attribute) else None
    if public == "operator":
        allowed = attribute in _OPERATORS
    elif public == "torch" and attribute in _FACTORIES:
        allowed = True
    else:
        allowed = found in _tensor_functions()
    if found is None or not allowed:
        raise Undescribable(f"the function {name!r}")
    return found


#: torch's functions that make tensors from numbers (not in its override table: they take no
#: tensor), without the random ones
_FACTORIES = frozenset({
    "arange", "zeros", "ones", "full", "empty", "empty_strided", "tensor", "scalar_tensor",
    "linspace", "logspace", "eye", "tril_indices", "triu_indices"})
#: ``Tensor`` methods in torch's table that take a function or leave tensors behind
_NOT_REPLAYED = frozenset({
    "register_hook", "register_post_accumulate_grad_hook", "apply_", "map_", "map2_",
    "backward", "numpy", "storage", "untyped_storage", "share_memory_", "pin_memory"})


def _method(name: str) -> Any:
    """``torch.Tensor``'s own function for the method ``name``."""
    found = getattr(torch.Tensor, name, None) if _NAME.fullmatch(name) else None
    if found is None or name in _NOT_REPLAYED or found not in _tensor_functions():
        raise Undescribable(f"the method {name!r}")
    return found


@functools.cache
def _tensor_functions() -> frozenset[Any]:
    """The functions and ``Tensor`` methods that take tensors (torch's override table)."""
    from torch.overrides import get_overridable_functions
    return frozenset(function for functions in get_overridable_functions().values()
                     for function in functions)


def _value(data: Any, made: list[Any]) -> Any:
    if not isinstance(data, dict) or len(data) != 1:
        raise Undescribable("an argument")
    ((kind, value),) = data.items()
    if kind == "node":
        if not isinstance(value, int) or not 0 <= value < len(made) or made[value] is None:
            raise Undescribable("a node's argument")
        return made[value]
    if kind in ("list", "tuple", "slice") and isinstance(value, list):
        items = [_value(item, made) for item in value]
        if kind == "slice":
            if len(items) != 3:
                raise Undescribable("a slice")
            return slice(*items)
        return items if kind == "list" else tuple(items)
    if kind == "dict" and isinstance(value, dict):
        return {key: _value(item, made) for key, item in value.items()}
    if kind == "value" and (value is None or isinstance(value, bool | int | float | str)):
        return value
    if kind == "float" and value in ("inf", "-inf", "nan"):
        return float(value)
    table = {"dtype": _DTYPES, "layout": _LAYOUTS, "memory_format": _MEMORY_FORMATS}.get(kind)
    if table is not None and value in table:
        return table[value]
    if kind == "device" and value == "cpu":
        return torch.device("cpu")
    raise Undescribable(f"an argument {kind!r}")
