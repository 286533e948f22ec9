"""Symbolic tracing: run ``forward`` once on Proxies and record what it does as a Graph.

While a trace runs (and only then) ``nn.Module.__call__`` and ``nn.Module.__getattr__`` are
patched so that submodule calls and parameter reads become nodes; autowrapped and
``wrap()``-ed functions are patched in the globals that use them. Everything is restored
when the trace ends, however it ends.
"""

from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import warnings
from collections.abc import Callable
from itertools import chain
from types import CodeType, FunctionType, ModuleType
from typing import Any

import torch
import torch.utils._pytree as pytree

from fxcore._proxyable import is_proxyable_instance
from fxcore._pytree import PyTreeInfo
from fxcore._tracing_flag import is_fx_tracing, set_fx_tracing
from fxcore._wrap_registry import _wrapped_fns_to_patch, _wrapped_methods_to_patch, wrap
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Argument, Node, map_aggregate
from fxcore.proxy import _BASE_TYPES, ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase
from fxcore.source import forget_frames, trace_boundary

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "is_fx_tracing"]

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_orig_module_call: Callable[..., Any] = torch.nn.Module.__call__
_orig_module_getattr: Callable[..., Any] = torch.nn.Module.__getattr__

class PHBase:
    """A placeholder inside a ``concrete_args`` structure: this leaf stays an input."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    def __init__(self, ph_key: str | None = None) -> None:
        super().__init__()
        self.ph_key = ph_key


def _copy_marks(placeholder: PHBase, node: Node) -> None:
    """A ``PHBase`` subclass instance's own data fields become attributes of its node."""
    if placeholder is PH:
        return
    for name in dir(placeholder):
        value = getattr(placeholder, name)
        if not name.startswith("__") and not callable(value) and not hasattr(node, name):
            setattr(node, name, value)


def _assert_is_none(value: object, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)


def _find_proxy(*objects: Any) -> Proxy | None:
    found: Proxy | None = None

    def look(x: Any) -> Any:
        nonlocal found
        if isinstance(x, Proxy):
            found = x
        return x

    map_aggregate(objects, look)
    return found


def _create_wrapped_func(orig_fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(orig_fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            result = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            result.node.meta["is_wrapped"] = True
            return result
        return orig_fn(*args, **kwargs)

    wrapped.__fxcore_patched__ = True  # type: ignore[attr-defined]
    return wrapped


class _Patcher:
    """Applies patches for the duration of a trace and undoes them in reverse order."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[int] = set()

    def patch(self, frame_dict: dict[str, Any], name: str, new_fn: Callable[..., Any]) -> None:
        if name not in frame_dict and hasattr(builtins, name):
            self._undo.append(lambda: frame_dict.pop(name, None))
        elif getattr(frame_dict[name], "__fxcore_patched__", False):
            return
        else:
            original = frame_dict[name]
            self._undo.append(lambda: frame_dict.__setitem__(name, original))
        frame_dict[name] = new_fn

    def patch_method(self, cls: type, name: str, new_fn: Callable[..., Any]) -> None:
        original = getattr(cls, name)
        self._undo.append(lambda: setattr(cls, name, original))
        setattr(cls, name, new_fn)

    def visit_once(self, thing: object) -> bool:
        key = id(thing)
        if key in self._visited:
            return False
        self._visited.add(key)
        return True

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc: object) -> None:
        while self._undo:
            self._undo.pop()()
        self._visited.clear()


def _autowrap_check(patcher: _Patcher, frame_dict: dict[str, Any], function_ids: set[int]) -> None:
    if patcher.visit_once(frame_dict):
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


def _create_wrapped_method(cls: type, name: str) -> Callable[..., Any]:
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_method", name, args, kwargs)
        return original(*args, **kwargs)

    return wrapped


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    for (_, name), frame_dict in list(_wrapped_fns_to_patch.items()):
        if name not in frame_dict and hasattr(builtins, name):
            original = getattr(builtins, name)
        else:
            original = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(original))
    for cls, name in _wrapped_methods_to_patch:
        patcher.patch_method(cls, name, _create_wrapped_method(cls, name))


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """``fn`` with ``*args``/``**kwargs`` turned into plain positional parameters."""
    code: CodeType = fn.__code__.replace(
        co_argcount=nargs,
        co_posonlyargcount=0,
        co_kwonlyargcount=0,
        co_flags=fn.__code__.co_flags & ~_HAS_VARSTUFF,
    )
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


@trace_boundary
def _call_traced(fn: Callable[..., Any], args: list[Any]) -> Any:
    return fn(*args)


class Tracer(TracerBase):
    """Traces a module or function into a Graph; subclass to change leaf rules and more."""

    def __init__(
        self,
        autowrap_modules: tuple[ModuleType, ...] = (math,),
        autowrap_functions: tuple[Callable[..., Any], ...] = (),
        param_shapes_constant: bool = False,
    ) -> None:
        super().__init__()
        self._autowrap_function_ids: set[int] = {
            id(value)
            for name, value in chain.from_iterable(m.__dict__.items() for m in autowrap_modules)
            if not name.startswith("_") and callable(value)
        }
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search: list[ModuleType] = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict[torch.nn.Module, str] | None = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope = {}
        self._param_names: dict[int, str] | None = None
        self._buffer_names: dict[int, str] | None = None

    # -- values ------------------------------------------------------------------------
    def _names_of(self, kind: str) -> dict[int, str]:
        if kind == "param":
            if self._param_names is None:
                self._param_names = {id(p): n for n, p in self.root.named_parameters()}
            return self._param_names
        if self._buffer_names is None:
            self._buffer_names = {id(b): n for n, b in self.root.named_buffers()}
        return self._buffer_names

    def create_arg(self, a: Any) -> Argument:
        if isinstance(a, torch.nn.Parameter):
            name = self._names_of("param").get(id(a))
            if name is None:
                for n, p in self.root.named_parameters():
                    if a is p:
                        name = n
                        break
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, torch.Tensor):
            name = self._names_of("buffer").get(id(a))
            if name is not None:
                return self.create_node("get_attr", name, (), {})
        elif isinstance(a, torch.nn.Module):
            for n, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("module is not installed as a submodule")
        elif isinstance(a, tuple) and type(a) is not tuple and hasattr(a, "_fields"):
            # a NamedTuple written in the traced code is rebuilt by a node calling its type
            fields = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", type(a), fields, {})
        if isinstance(a, torch.Tensor | torch.ScriptObject):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                index = 0
                while True:
                    qualname = f"_tensor_constant{index}"
                    if not hasattr(self.root, qualname):
                        break
                    index += 1
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if is_proxyable_instance(a):  # built from plain values: kept as a constant attribute
            index = 0
            while hasattr(self.root, qualname := f"_{type(a).__name__}_constant_{index}"):
                index += 1
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    # -- modules -----------------------------------------------------------------------
    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        module_name = type(m).__module__
        return (
            module_name.startswith("torch.nn") or module_name.startswith("torch.ao.nn")
        ) and not isinstance(m, torch.nn.Sequential)

    def path_of_module(self, mod: torch.nn.Module) -> str:
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for name, candidate in self.root.named_modules():
            if mod is candidate:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(
        self,
        m: torch.nn.Module,
        forward: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as scope:
            self.module_stack[scope.module_path] = (module_qualified_name, scope.module_type)
            try:
                if not self.is_leaf_module(m, module_qualified_name):
                    return self._run_submodule(m, module_qualified_name, forward, args, kwargs)
                return self.create_proxy("call_module", module_qualified_name, args, kwargs)
            finally:
                self.module_stack.popitem(last=True)

    def _run_submodule(
        self,
        m: torch.nn.Module,
        qualified_name: str,
        forward: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        return forward(*args, **kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        def cached_proxy(kind: str, collection: Callable[[], Any]) -> Any:
            name = self._names_of(kind).get(id(attr_val))
            if name is None:
                for n, p in collection():
                    if attr_val is p:
                        name = n
                        break
            if name is None:
                return None
            if name not in parameter_proxy_cache:
                factory = None
                if self.param_shapes_constant:

                    def factory(node: Node) -> Proxy:
                        return ParameterProxy(self, node, name, attr_val)

                parameter_proxy_cache[name] = self.create_proxy(
                    "get_attr", name, (), {}, proxy_factory_fn=factory
                )
            return parameter_proxy_cache[name]

        if isinstance(attr_val, torch.nn.Parameter):
            proxy = cached_proxy("param", self.root.named_parameters)
            if proxy is not None:
                return proxy
        if self.proxy_buffer_attributes and isinstance(attr_val, torch.Tensor):
            proxy = cached_proxy("buffer", self.root.named_buffers)
            if proxy is not None:
                return proxy
        return attr_val

    # -- inputs ------------------------------------------------------------------------
    def create_args_for_root(
        self, root_fn: Callable[..., Any], is_module: bool, concrete_args: Any = None
    ) -> tuple[Callable[..., Any], list[Any]]:
        fn_for_analysis = inspect.unwrap(root_fn)
        code = fn_for_analysis.__code__
        total_args = code.co_argcount + code.co_kwonlyargcount
        names_iter = iter(code.co_varnames)
        args: list[Any] = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        if (
            isinstance(concrete_args, tuple)
            and concrete_args
            and code.co_flags & _HAS_VARSTUFF
            and total_args == 1
        ):
            # ``forward(self, *args, **kwargs)`` with a flat tuple: one input per element,
            # passed through ``*args`` as they are
            for index, value in enumerate(concrete_args):
                proxy = self.create_proxy("placeholder", f"input_{index}", (), {})
                if isinstance(value, PHBase):
                    _copy_marks(value, proxy.node)
                args.append(proxy)
            return root_fn, args
        arg_names = [next(names_iter) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(concrete_args) != len(arg_names):
                raise RuntimeError(
                    f"Tracing expected {len(arg_names)} arguments but got "
                    f"{len(concrete_args)} concrete arguments"
                )
            concrete_args = dict(zip(arg_names, concrete_args, strict=True))

        def placeholder(name: str) -> Any:
            return self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis)

        args.extend(placeholder(name) for name in arg_names)
        if code.co_kwonlyargcount > 0 or code.co_flags & _HAS_VARSTUFF:
            if code.co_flags & inspect.CO_VARARGS:
                args.append(placeholder("*" + next(names_iter)))
            if code.co_flags & inspect.CO_VARKEYWORDS:
                args.append(placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))  # type: ignore[arg-type]
        flat_args, in_spec = pytree.tree_flatten(tuple(args))
        if all(child.is_leaf() for child in in_spec.children()):
            return root_fn, args
        # Placeholders inside containers: the graph takes the leaves, generated code
        # unpacks the containers it is called with (see fxcore._pytree).
        graph = self.graph
        graph._pytree_info = PyTreeInfo(list(code.co_varnames[:total_args]), in_spec, None)
        structured_fn = root_fn

        def flat_fn(*leaves: Any) -> Any:
            result = structured_fn(*pytree.tree_unflatten(list(leaves), in_spec))
            out_leaves, out_spec = pytree.tree_flatten(result)
            assert graph._pytree_info is not None
            graph._pytree_info = graph._pytree_info._replace(out_spec=out_spec)
            return out_leaves

        flat_fn.__annotations__ = {}  # its annotations are not the user's: keep them out of code
        return flat_fn, flat_args

    def _proxy_placeholder(
        self,
        name: str,
        concrete_args: dict[str, Any] | None,
        sig: inspect.Signature,
        fn: Callable[..., Any],
    ) -> Any:
        if concrete_args is not None and name in concrete_args:
            count = 0

            def replace_ph(x: Any) -> Any:
                nonlocal count
                count += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{count}", default, {})
                if isinstance(x, PHBase):
                    _copy_marks(x, out.node)
                    return out
                if type(x) in _BASE_TYPES and type(x) is not torch.Tensor:  # guardable value
                    torch._assert(
                        out == x,
                        f"{name} has been specialized to have value {x} but got another value",
                    )
                elif x is None:
                    self.create_proxy(
                        "call_function",
                        _assert_is_none,
                        (
                            out,
                            f"{name} has been specialized to have value None but got another value",
                        ),
                        {},
                    )
                else:
                    warnings.warn(
                        f"Was not able to add assertion to guarantee correct input {name} to "
                        "specialized function. It is up to the user to make sure that your "
                        "inputs match the inputs you specialized the function with.",
                        stacklevel=2,
                    )
                return x

            return pytree.tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default: tuple[Any, ...] = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy(
            "placeholder",
            name,
            default,
            {},
            type_expr=getattr(fn, "__annotations__", {}).get(name, None),
        )

    # -- the trace ---------------------------------------------------------------------
    @trace_boundary
    def trace(
        self,
        root: torch.nn.Module | Callable[..., Any],
        concrete_args: dict[str, Any] | None = None,
    ) -> Graph:
        previous_flag = set_fx_tracing(True)
        try:
            if isinstance(root, torch.nn.Module):
                self.root = root
                if not hasattr(type(root), self.traced_func_name):
                    raise AssertionError(
                        f"traced_func_name={self.traced_func_name} doesn't exist in "
                        f"{type(root).__name__}"
                    )
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = torch.nn.Module()
                fn = root
            self._param_names = None
            self._buffer_names = None
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {
                    "co_name": code.co_name,
                    "co_filename": code.co_filename,
                    "co_firstlineno": code.co_firstlineno,
                }
            self.tensor_attrs: dict[Any, str] = {}
            self._collect_tensor_attrs(self.root, [])
            if not isinstance(fn, FunctionType):
                raise AssertionError(f"Expected a function to trace, got {type(fn)}")
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(
                fn, isinstance(root, torch.nn.Module), concrete_args
            )
            parameter_proxy_cache: dict[str, Any] = {}
            tracer = self

            @functools.wraps(_orig_module_getattr)
            def module_getattr_wrapper(mod: torch.nn.Module, attr: str) -> Any:
                attr_val = _orig_module_getattr(mod, attr)
                return tracer.getattr(attr, attr_val, parameter_proxy_cache)

            @functools.wraps(_orig_module_call)
            def module_call_wrapper(mod: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
                def forward(*args: Any, **kwargs: Any) -> Any:
                    return _orig_module_call(mod, *args, **kwargs)

                forward_globals = getattr(getattr(mod, "forward", mod), "__globals__", {})
                _autowrap_check(patcher, forward_globals, tracer._autowrap_function_ids)
                return tracer.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(torch.nn.Module, "__getattr__", module_getattr_wrapper)
                patcher.patch_method(torch.nn.Module, "__call__", module_call_wrapper)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                result = self._run_root(fn, args)
                self.create_node(
                    "output",
                    "output",
                    (self.create_arg(result),),
                    {},
                    type_expr=fn.__annotations__.get("return", None),
                )
            self.submodule_paths = None
        finally:
            set_fx_tracing(previous_flag)
            forget_frames()
        return self.graph

    def _run_root(self, fn: Callable[..., Any], args: list[Any]) -> Any:
        return _call_traced(fn, args)

    def _collect_tensor_attrs(self, module: torch.nn.Module, prefix: list[str]) -> None:
        for k, v in module.__dict__.items():
            if isinstance(v, torch.Tensor | torch.ScriptObject):
                self.tensor_attrs[v] = ".".join([*prefix, k])
        for k, child in module.named_children():
            self._collect_tensor_attrs(child, [*prefix, k])

    def __deepcopy__(self, memo: dict[int, Any]) -> Tracer:
        import copy

        new_tracer = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            setattr(new_tracer, k, v if k == "_autowrap_search" else copy.deepcopy(v, memo))
        return new_tracer


def symbolic_trace(
    root: torch.nn.Module | Callable[..., Any], concrete_args: dict[str, Any] | None = None
) -> GraphModule:
    """Trace ``root`` and return a GraphModule holding the graph and the code it generates."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, torch.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
