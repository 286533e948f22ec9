"""Proxy: the stand-in value that records every operation applied to it as a graph node."""

from __future__ import annotations

import collections
import copy
import dataclasses
import dis
import enum
import functools
import operator
import sys
from collections.abc import Callable, Iterator
from types import CodeType
from typing import Any

import torch

from fxcore._codegen import magic_methods, reflectable_magic_methods
from fxcore.graph import Graph
from fxcore.node import Argument, Node, Target, map_aggregate, map_arg

__all__ = [
    "TracerBase",
    "GraphAppendingTracer",
    "TraceError",
    "Proxy",
    "Attribute",
    "ParameterProxy",
    "Scope",
    "ScopeContextManager",
]

_BASE_TYPES = (
    str,
    int,
    float,
    bool,
    complex,
    torch.dtype,
    torch.Tensor,
    torch.device,
    torch.memory_format,
    torch.layout,
    torch._ops.OpOverload,
    torch.SymInt,
    torch.SymBool,
    torch.SymFloat,
)


#: values create_arg returns as they are (checked by exact type before anything slower)
_PLAIN_TYPES = frozenset(
    {str, int, float, bool, complex, type(None), type(...), torch.dtype, torch.device}
)


_PLAIN_CONTAINERS = frozenset({tuple, list, dict})


class TraceError(ValueError):
    pass


def _refuse_node_in_key(node: Node) -> Node:
    raise RuntimeError(
        f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {node}"
    )


class Scope:
    """The module path and type a node is recorded under (``nn_module_stack``)."""

    def __init__(self, module_path: str, module_type: Any) -> None:
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    def __init__(self, scope: Scope, current_scope: Scope) -> None:
        self._prev_scope = copy.copy(scope)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args: object) -> None:
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


class TracerBase:
    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Scope
    module_stack: collections.OrderedDict[str, tuple[str, Any]]
    node_name_to_scope: dict[str, tuple[str, type]]

    def create_node(
        self,
        kind: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        if self.check_mutable_operations and kind == "call_function":
            from fxcore.operator_schemas import check_for_mutable_operation

            check_for_mutable_operation(target, args, kwargs)  # type: ignore[arg-type]
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        module_stack = getattr(self, "module_stack", None)
        if module_stack:
            node.meta["nn_module_stack"] = copy.copy(module_stack)
        scope = getattr(self, "scope", None)
        if scope is not None:
            self.node_name_to_scope[node.name] = (scope.module_path, scope.module_type)
        if self.record_stack_traces and not node.meta.get("stack_trace"):
            self._record_stack_trace(node)
        return node

    def _record_stack_trace(self, node: Node) -> None:
        from fxcore._stack_trace import format_stack_trace
        from fxcore.source import user_stack

        spans = node.meta.get("source_stack")
        if spans is None:  # source recording is off: walk the stack now
            spans = user_stack(sys._getframe(1))
        if spans:
            node.meta["stack_trace"] = format_stack_trace(spans)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(
        self,
        kind: str,
        target: Target,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        name: str | None = None,
        type_expr: Any | None = None,
        proxy_factory_fn: Callable[[Node], Proxy] | None = None,
    ) -> Proxy:
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if proxy_factory_fn is None:
            return self.proxy(node)
        return proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """Turn a Python value that may hold Proxies into a node argument."""
        if isinstance(a, Proxy):
            return a.node
        kind = type(a)
        if kind in _PLAIN_TYPES:
            return a
        if kind not in _PLAIN_CONTAINERS and hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*(self.create_arg(elem) for elem in a))
            return tuple(self.create_arg(elem) for elem in a)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            result = {}
            for k, v in a.items():
                key = self.create_arg(k)
                map_arg(key, _refuse_node_in_key)  # anywhere inside the key, e.g. in a tuple
                result[key] = self.create_arg(v)
            return result
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, _BASE_TYPES) or a is None or a is ...:
            return a
        if isinstance(a, enum.Enum):
            return a
        if isinstance(a, torch._ops.OpOverloadPacket | torch._ops.HigherOrderOperator):
            return a
        if dataclasses.is_dataclass(a):  # rebuilt by a call of its class, field by field
            fields = {f.name: self.create_arg(getattr(a, f.name)) for f in dataclasses.fields(a)}
            return self.create_node("call_function", type(a), (), fields)
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator[Any]:
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in "
            "a loop or as a *args or **kwargs function argument. See the torch.fx docs on "
            "pytorch.org for a more detailed explanation of what types of control flow can be "
            "traced, and check out the Proxy docstring for help troubleshooting Proxy "
            "iteration errors"
        )

    def keys(self, obj: Proxy) -> Any:
        return Attribute(obj, "keys")()

    def length(self, obj: Proxy) -> int:
        raise RuntimeError(
            "'len' is not supported in symbolic tracing by default. If you want this call to "
            "be recorded, please call torch.fx.wrap('len') at module scope"
        )


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing graph (for building graphs by hand with Proxies)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}


class Proxy:
    """Stands for a value during tracing; every operation on it becomes a node."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        return Attribute(self, k)

    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict[int, Any]) -> Proxy:
        # Everything is copied, the node (with its graph) and the tracer too; what cannot
        # be deep-copied is shared.
        copied: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            try:
                copied[k] = copy.deepcopy(v, memo)
            except Exception:
                copied[k] = copy.copy(v)
        result = Proxy(copied["node"], copied["tracer"])
        result.__dict__.update(copied)
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        calling_frame = sys._getframe(1)
        count = _unpacked_count(calling_frame.f_code, calling_frame.f_lasti)
        if count is not None:
            return (self[i] for i in range(count))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Any:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        return self.tracer.length(self)

    @classmethod
    def __torch_function__(
        cls,
        orig_method: Callable[..., Any],
        types: tuple[type, ...],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> Proxy:
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers: dict[TracerBase, None] = {}

        def find_tracer(a: Any) -> Any:
            if isinstance(a, Proxy):
                tracers[a.tracer] = None
            return a

        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(
                f"Found multiple different tracers {list(tracers)} while trying to trace "
                f"operations {orig_method}"
            )
        tracer = next(iter(tracers))
        if isinstance(orig_method, torch._C.ScriptMethod):
            return tracer.create_proxy(
                "call_method", orig_method.name, (orig_method.owner, *args), kwargs
            )
        if torch.overrides.is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy(
            "call_function",
            orig_method,
            args,
            kwargs,
            name=tracer.graph._target_to_str(orig_method.__name__),
        )


class Attribute(Proxy):
    """``proxy.attr``: becomes ``getattr`` if used as a value, ``call_method`` if called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:  # type: ignore[override]
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", getattr, (self.root, self.attr), {}
            ).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """A parameter's proxy whose shape questions are answered from the real parameter."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: torch.Tensor) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self) -> torch.Size:
        return self.param.shape

    def size(self, dim: int | None = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _define_magic(method: str) -> None:
    def impl(*args: Any, **kwargs: Any) -> Proxy:
        target = getattr(operator, method)
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)

    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


def _define_reflected(method: str) -> None:
    name = f"__r{method.strip('_')}__"

    def impl(self: Proxy, rhs: Any) -> Proxy:
        target = getattr(operator, method)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})

    impl.__name__ = impl.__qualname__ = name
    setattr(Proxy, name, impl)


for _method in magic_methods:
    _define_magic(_method)
for _method in reflectable_magic_methods:
    _define_reflected(_method)


_UNPACK_SEQUENCE = dis.opmap["UNPACK_SEQUENCE"]
_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]


@functools.lru_cache(maxsize=4096)
def _unpacked_count(code: CodeType, offset: int) -> int | None:
    """How many values the instruction at ``offset`` unpacks (``a, b = proxy``), or None
    when it is not an unpacking (a loop, ``list(proxy)``): a model's line runs once per
    instance and per call, its bytecode is read once. Only that instruction is decoded (and
    the ``EXTENDED_ARG`` prefixes of its argument): decoding the whole function took
    milliseconds in every new job process."""
    raw = code.co_code
    if offset < 0 or offset + 1 >= len(raw) or raw[offset] != _UNPACK_SEQUENCE:
        return None
    count, shift, prefix = raw[offset + 1], 8, offset - 2
    while prefix >= 0 and raw[prefix] == _EXTENDED_ARG:
        count |= raw[prefix + 1] << shift
        shift, prefix = shift + 8, prefix - 2
    return count
