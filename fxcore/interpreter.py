"""Interpreter runs a GraphModule node by node; Transformer rebuilds it into a new one."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator
from typing import Any

import torch

from fxcore._symbolic_trace import Tracer
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Argument, Node, Target, map_aggregate, map_arg
from fxcore.proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Executes a graph one node at a time; override the opcode methods to change semantics."""

    def __init__(
        self,
        module: torch.nn.Module,
        garbage_collect_values: bool = True,
        graph: Graph | None = None,
    ) -> None:
        self.module = module
        self.submodules = dict(self.module.named_modules())
        if graph is not None:
            self.graph = graph
        else:
            self.graph = self.module.graph  # type: ignore[assignment]
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.args_iter: Iterator[Any] = iter(())
        if self.garbage_collect_values:
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(
        self,
        *args: Any,
        initial_env: dict[Node, Any] | None = None,
        enable_io_processing: bool = True,
    ) -> Any:
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as error:
                if self.extra_traceback and not getattr(error, "_fxcore_node_noted", False):
                    note = f"While executing {node.format_node()}"
                    span = node.meta.get("source")
                    if span is not None:
                        note += f"\nOriginal source: {span.file}:{span.line}"
                    error.add_note(note)
                    try:
                        error._fxcore_node_noted = True  # type: ignore[attr-defined]
                    except AttributeError:
                        pass
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    del self.env[dead]
            if node.op == "output":
                result = self.env[node]
                return self.graph.process_outputs(result) if enable_io_processing else result
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """Run with the placeholders' values in ``args_list``, which is emptied (not copied)."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra" if len(args_list) > len(placeholders) else "missing"
            raise RuntimeError(
                f"Interpreter.boxed_run expected {len(placeholders)} arguments for "
                f"placeholders but received {len(args_list)} ({detail} arguments)"
            )
        env = dict(zip(placeholders, args_list, strict=True))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- opcodes -----------------------------------------------------------------------
    def placeholder(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as stop:
            if args:
                return args[0]
            raise RuntimeError(
                f"Expected positional argument for parameter {target}, but one was not passed in!"
            ) from stop

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)

    def call_function(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        self_obj, *args_tail = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return args[0]

    # -- helpers -----------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        atoms = target.split(".")
        current: Any = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(current, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[: i + 1])}")
            current = getattr(current, atom)
        return current

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Any:
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(
                    f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to "
                    "diagnose such issues"
                )
            return self.env[n_arg]

        return map_arg(args, load_arg)


#: meta a node made by Transformer takes from the node it was made for, as in torch.fx,
#: plus fxcore's own source spans
_COPIED_META = (
    "stack_trace",
    "nn_module_stack",
    "torch_fn",
    "source_fn_stack",
    "original_aten",
    "recompute",
    "ac_graph_id",
    "has_backward_hook",
    "from_node",
    "quantization_tag",
    "_numeric_debug_handle",
    "custom",
    "partitioner_tag",
    "source",
    "source_stack",
)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        #: meta of the node being transformed: nodes made for it inherit parts of it
        self.current_meta: dict[str, Any] | None = None

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return True

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        node = super().create_node(*args, **kwargs)
        if self.current_meta:
            meta = node.meta
            for key in _COPIED_META:
                if key in self.current_meta:
                    meta[key] = copy.copy(self.current_meta[key])
        return node


class Transformer(Interpreter):
    """Runs the graph on Proxies, so each opcode method can emit different nodes."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)  # same signature and I/O processing
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def run_node(self, n: Node) -> Any:
        self.tracer.current_meta = n.meta
        try:
            return super().run_node(n)
        finally:
            self.tracer.current_meta = None

    def placeholder(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Proxy:
        assert isinstance(target, str)
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        assert isinstance(target, str)
        submodule = self.fetch_attr(target)
        return self.tracer.call_module(submodule, submodule.forward, args, kwargs)

    def call_function(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        result = super().run(enable_io_processing=False)
        if result is not None:

            def strip_proxy(a: Any) -> Any:
                return a.node if isinstance(a, Proxy) else a

            new_output = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_output = list(self.graph.nodes)[-1]
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)
