"""GraphModule: an nn.Module whose ``forward`` is the Python code generated from its Graph."""

from __future__ import annotations

import copy
import importlib
import itertools
import linecache
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from fxcore import _codegen
from fxcore.graph import Graph
from fxcore.node import Node, _get_qualified_name, map_aggregate, map_arg

__all__ = ["GraphModule"]

_next_key = itertools.count()


def _exec_with_source(
    src: str, globals_: dict[str, Any], co_fields: dict[str, Any] | None = None
) -> str:
    key = f"<eval_with_key>.{next(_next_key)}"
    if co_fields:  # name the traced function, so tracebacks say where the graph came from
        key += (
            f" from {co_fields.get('co_filename')}:{co_fields.get('co_firstlineno')} "
            f"in {co_fields.get('co_name')}"
        )
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)
    return key


def _forward_from_src(
    src: str, globals_: dict[str, Any], co_fields: dict[str, Any] | None = None
) -> tuple[Any, str]:
    scope = dict(globals_)
    key = _exec_with_source(src, scope, co_fields)
    return scope["forward"], key


def _copy_attr(from_module: torch.nn.Module, to_module: torch.nn.Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        source = getattr(from_module, item)
        destination = getattr(to_module, item, None)
        if source is destination:
            return
        if destination is None:
            destination = torch.nn.Module()
            setattr(to_module, item, destination)
        from_module, to_module = source, destination
    original = getattr(from_module, field)
    if isinstance(original, torch.Tensor) and not isinstance(original, torch.nn.Parameter):
        to_module.register_buffer(field, original)
    else:
        setattr(to_module, field, original)


def _assign_attr(value: Any, to_module: torch.nn.Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        child = getattr(to_module, item, None)
        if child is None:
            child = torch.nn.Module()
            setattr(to_module, item, child)
        to_module = child
    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


class GraphModule(torch.nn.Module):
    """Holds a Graph, the attributes it references, and the ``forward`` compiled from it."""

    # TorchScript compiles properties; the graph is Python-only
    __jit_unused_properties__ = ["graph"]

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # Each instance gets its own class so that recompile() can set ``forward`` on it.
        for base in cls.__mro__:
            if base.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = base
                break
        impl = type("GraphModuleImpl", (cls,), {})
        return super().__new__(impl)

    def __init__(
        self,
        root: torch.nn.Module | dict[str, Any],
        graph: Graph,
        class_name: str = "GraphModule",
    ) -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, torch.nn.Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets_to_copy = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(
                            f"Node {node} referenced target {node.target} but that target was "
                            "not provided in ``root``!"
                        )
                    targets_to_copy.append(node.target)
            targets_to_copy.sort(key=lambda t: t.count("."))
            for target in targets_to_copy:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = graph._tracer_cls
        self._tracer_extras = graph._tracer_extras
        self.meta: dict[str, Any] = {}

    # -- graph and code ----------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> Any:
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        info = self._graph._pytree_info
        if info is not None:
            self._in_spec = info.in_spec
            self._out_spec = info.out_spec
        self._lineno_map = python_code._lineno_map
        self._prologue_start = python_code._prologue_start
        cls = type(self)
        forward, key = _forward_from_src(
            self._code, python_code.globals, getattr(self._graph, "_co_fields", None)
        )
        self._code_key = key
        cls.forward = forward
        if "__call__" not in vars(cls):
            cls.__call__ = _call_reporting_generated_line
        return python_code

    def node_of_generated_line(self, lineno: int) -> Node | None:
        index = self._lineno_map.get(lineno - self._prologue_start)
        if index is None:
            return None
        return next((n for i, n in enumerate(self._graph.nodes) if i == index), None)

    # -- printing ----------------------------------------------------------------------
    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code])

    def print_readable(
        self,
        print_output: bool = True,
        include_stride: bool = False,
        include_device: bool = False,
        colored: bool = False,
        **_: Any,
    ) -> str:
        text = self._readable(type(self).__name__)
        if print_output:
            print(text)
        return text

    def _readable(self, name: str) -> str:
        code = self._graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
        parts = [_indent_lines(f"class {name}(torch.nn.Module):\n{code}")]
        parts.extend(
            _indent_lines(f"\n{child._readable(child_name)}")
            for child_name, child in self.named_children()
            if isinstance(child, GraphModule)
        )
        return "".join(parts)

    # -- submodules --------------------------------------------------------------------
    def add_submodule(self, target: str, m: torch.nn.Module) -> bool:
        *prefix, field = target.split(".")
        module: torch.nn.Module = self
        for item in prefix:
            child = getattr(module, item, None)
            if child is None:
                child = torch.nn.Module()
                setattr(module, item, child)
            if not isinstance(child, torch.nn.Module):
                return False
            module = child
        module.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        *path, name = target.split(".")
        module: torch.nn.Module = self
        for item in path:
            if not hasattr(module, item):
                return False
            module = getattr(module, item)
            if not isinstance(module, torch.nn.Module):
                return False
        if not hasattr(module, name) or not isinstance(getattr(module, name), torch.nn.Module):
            return False
        delattr(module, name)
        return True

    def delete_all_unused_submodules(self) -> None:
        used: list[str] = []
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.extend(".".join(atoms[: i + 1]) for i in range(len(atoms)))
                if node.op == "call_module":
                    try:
                        submodule = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.extend(f"{node.target}.{n}" for n, _ in submodule.named_modules())
        used_set = set(used)
        to_delete = [name for name, _ in self.named_modules() if name and name not in used_set]
        for name in to_delete:
            self.delete_submodule(name)

    # -- copying -----------------------------------------------------------------------
    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        holder = torch.nn.Module()
        holder.__dict__.update(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(result, holder, holder.__dict__["_graph"], type(self).__name__)
        for attr in ("meta", "_tracer_cls", "_tracer_extras"):
            if attr in holder.__dict__:
                setattr(result, attr, holder.__dict__[attr])
        return result

    def __copy__(self) -> GraphModule:
        result = GraphModule(self, self._graph)
        result.meta = getattr(self, "meta", {})
        return result

    def _replicate_for_data_parallel(self) -> GraphModule:
        replica = self.__copy__()
        object.__setattr__(replica, "_is_replica", True)
        return replica

    def __reduce__(self) -> Any:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        rows = _serialize_graph(self._graph)
        return (_rebuild, (state, rows, type(self).__name__, self._graph._pytree_info))

    def to_folder(self, folder: str | os.PathLike[str], module_name: str = "FxModule") -> None:
        """Write this module as an importable package: ``__init__.py`` plus its tensors."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        # this module's own tensors, non-persistent buffers included (they are used too)
        own = dict(itertools.chain(self._parameters.items(), self._buffers.items()))
        state = {name: t.detach() for name, t in own.items() if t is not None}
        torch.save(state, folder / "state_dict.pt")
        blobs = []
        for name, child in self.named_children():
            torch.save(child, folder / f"{name}.pt")
            blobs.append(
                f"        setattr(self, {name!r}, torch.load(r'{folder / (name + '.pt')}', "
                "weights_only=False))"
            )
        tensors = []
        for name, param in self._parameters.items():
            if param is not None:
                tensors.append(
                    f"        self.register_parameter({name!r}, torch.nn.Parameter("
                    f"state[{name!r}], requires_grad={param.requires_grad}))"
                )
        for name, buffer in self._buffers.items():
            if buffer is not None:
                persistent = name not in self._non_persistent_buffers_set
                tensors.append(
                    f"        self.register_buffer({name!r}, state[{name!r}], "
                    f"persistent={persistent})"
                )
        info = self._graph._pytree_info
        if info is not None:  # structured inputs: the code unpacks them with these specs
            torch.save((info.in_spec, info.out_spec), folder / "pytree_specs.pt")
            tensors.append(
                f"        self._in_spec, self._out_spec = torch.load("
                f"r'{folder / 'pytree_specs.pt'}', weights_only=False)"
            )
        python_code = self._graph.python_code(root_module="self")
        imports = "\n".join(_import_lines(python_code.globals))
        body = "\n".join(blobs + tensors) or "        pass"
        forward = "\n".join(
            ("    " + line) if line else line for line in python_code.src.strip("\n").splitlines()
        )
        text = (
            f"import torch\n{imports}\n\n\nclass {module_name}(torch.nn.Module):\n"
            f"    def __init__(self):\n        super().__init__()\n"
            f"        state = torch.load(r'{folder / 'state_dict.pt'}', weights_only=False)\n"
            f"{body}\n\n{forward}\n"
        )
        (folder / "__init__.py").write_text(text)


def _indent_lines(text: str) -> str:
    """Every line but the first indented by four spaces; blank lines stay empty."""
    first, *rest = text.split("\n")
    return "\n".join([first, *(("    " + line) if line.strip() else "" for line in rest)])


def _import_lines(globals_: dict[str, Any]) -> list[str]:
    lines = []
    for name, obj in globals_.items():
        if name in ("torch", "inf", "nan", "NoneType", "device"):
            continue
        if isinstance(obj, str):  # a postponed annotation ('torch.Tensor')
            lines.append(f"{name} = {obj!r}")
            continue
        if isinstance(obj, ModuleType):  # fx_pytree, pytree
            lines.append(f"import {obj.__name__} as {name}")
            continue
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
        if module and qualname:
            lines.append(f"from {module} import {qualname.split('.')[0]} as {name}")
    lines.extend(["from math import inf, nan", "from torch import device", "NoneType = type(None)"])
    return lines


#: node meta that survives pickling: what changes generated code (``wrap("f")`` lines) and
#: torch.fx's recorded stack traces
_PICKLED_META = ("is_wrapped", "stack_trace")


class _NodeRef:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _TargetRef:
    """A torch function pickled by its dotted name (``torch.nn.functional.max_pool2d``).

    Some torch callables cannot be pickled by reference (``boolean_dispatch`` functions,
    ``torch.ops`` overloads); generated code names them by this path, so it resolves them.
    """

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        return (_TargetRef, (self.path,))

    @staticmethod
    def of(target: Any) -> Any:
        if isinstance(target, str) or not _codegen._is_from_torch(target):
            return target
        try:
            ref = _TargetRef(_get_qualified_name(target))
            if ref.resolve() is target:
                return ref
        except Exception:
            pass
        return target

    def resolve(self) -> Any:
        first, *rest = self.path.split(".")
        value: Any = importlib.import_module(first)
        for atom in rest:
            value = getattr(value, atom)
        return value


def _serialize_graph(graph: Graph) -> list[tuple[Any, ...]]:
    index_of: dict[Node, int] = {}
    rows = []
    for i, node in enumerate(graph.nodes):
        index_of[node] = i
        args = map_arg(node.args, lambda n: _NodeRef(index_of[n]))
        kwargs = map_arg(node.kwargs, lambda n: _NodeRef(index_of[n]))
        kept_meta = {k: node.meta[k] for k in _PICKLED_META if k in node.meta}
        target = _TargetRef.of(node.target)
        rows.append(
            (node.op, node.name, target, _plain(args), _plain(kwargs), node.type, kept_meta)
        )
    return rows


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _deserialize_graph(rows: list[tuple[Any, ...]]) -> Graph:
    graph = Graph()
    nodes: list[Node] = []

    def resolve(value: Any) -> Any:
        return nodes[value.index] if isinstance(value, _NodeRef) else value

    with graph._recording_off():
        for op, name, target, args, kwargs, type_expr, *meta in rows:
            node = graph.create_node(
                op,
                target.resolve() if isinstance(target, _TargetRef) else target,
                map_aggregate(args, resolve),
                dict(map_aggregate(kwargs, resolve)),
                name,
                type_expr,
            )
            if meta:
                node.meta.update(meta[0])
            nodes.append(node)
    return graph


def _rebuild(
    state: dict[str, Any],
    rows: list[tuple[Any, ...]],
    class_name: str,
    pytree_info: Any = None,
) -> GraphModule:
    holder = torch.nn.Module()
    holder.__dict__.update(state)
    graph = _deserialize_graph(rows)
    graph._pytree_info = pytree_info
    result = GraphModule(holder, graph, class_name)
    result.meta = state.get("meta", {})
    # GraphModule() keeps only what the graph uses; a saved module keeps the rest too
    for registry in ("_modules", "_parameters", "_buffers"):
        kept = getattr(result, registry)
        for name, value in state.get(registry, {}).items():
            kept.setdefault(name, value)
    result._non_persistent_buffers_set.update(state.get("_non_persistent_buffers_set", ()))
    for name, value in state.items():
        if name not in result.__dict__:
            result.__dict__[name] = value
    return result


def _call_reporting_generated_line(self: GraphModule, *args: Any, **kwargs: Any) -> Any:
    try:
        # the next __call__ after this instance's own class: a subclass's, else nn.Module's
        return super(type(self), self).__call__(*args, **kwargs)
    except Exception as error:
        _add_generated_context(self, error)
        raise


def _add_generated_context(module: GraphModule, error: BaseException) -> None:
    """Name the generated line (and its node) an exception went through, once per exception.

    Like torch.fx, an exception raised by the generated code itself (not by a function it
    calls) is also reported on stderr with the generated lines around it.
    """
    key = getattr(module, "_code_key", None)
    if key is None or getattr(error, "_fxcore_annotated", False):
        return
    frames = list(traceback.walk_tb(error.__traceback__))
    for frame, lineno in frames:
        if frame.f_code.co_filename != key:
            continue
        lines = module._code.splitlines()
        text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        node = module.node_of_generated_line(lineno)
        where = f" (node '{node.name}', op {node.op})" if node is not None else ""
        error.add_note(f"While executing generated line {lineno}{where}: {text}")
        if frames[-1][0] is frame:
            print(_generated_line_report(lines, lineno), file=sys.stderr)
        try:
            error._fxcore_annotated = True  # type: ignore[attr-defined]
        except AttributeError:
            pass
        return


def _generated_line_report(lines: list[str], lineno: int) -> str:
    """torch.fx's stderr report: the traceback, then the failing generated line marked."""
    failing = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    return "\n".join(
        [
            traceback.format_exc(),
            f"Call using an FX-traced Module, line {lineno} of the traced Module's "
            "generated forward function:",
            *lines[max(lineno - 2, 0) : lineno],
            "~" * len(failing) + "~~~ <--- HERE",
            *lines[lineno : lineno + 2],
        ]
    )
