"""Custom code generation (CodeGen, set_codegen, on_generate_code, the line map), size/stride
nodes, ProxyableClassMeta, wrapped methods and pytree flatten specs: fxcore against torch.fx."""

from __future__ import annotations

import collections
import copy
import operator
import pickle
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.fx
import torch.fx._pytree
import torch.fx._symbolic_trace
import torch.utils._pytree as pytree

import fxcore
import fxcore._pytree
import fxcore._symbolic_trace
from fxcore.graph import CodeGen

BOTH = pytest.mark.parametrize("fx", [torch.fx, fxcore], ids=["torch.fx", "fxcore"])


def _list_codegen(fx: ModuleType) -> Any:
    """A CodeGen taking the inputs as one list and returning a list (as torch.fx's docs do)."""

    class ListCodeGen(fx.graph.CodeGen):
        def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
            return (
                f"\ndef forward(self, args_list: List[torch.Tensor]){maybe_return_annotation}:"
                f"\n    {', '.join(free_vars)} = args_list"
            )

        def additional_globals(self) -> list[tuple[str, Any]]:
            return [("List", list)]

        def process_inputs(self, *inputs: Any) -> Any:
            assert len(inputs) == 1
            return inputs[0]

        def generate_output(self, output_args: Any) -> str:
            return f"return list({output_args!r})"

        def process_outputs(self, outputs: Any) -> Any:
            return list(outputs)

    return ListCodeGen()


def _two_outputs(a, b):  # type: ignore[no-untyped-def]  # annotations would be code
    a = a + b
    return a, a * b


@BOTH
def test_a_custom_codegen_changes_signature_and_return(fx: ModuleType) -> None:
    gm = fx.symbolic_trace(_two_outputs)
    vals = [torch.randn(3), torch.randn(3)]
    expected = list(_two_outputs(*vals))
    gm.graph.set_codegen(_list_codegen(fx))
    gm.recompile()
    assert "def forward(self, args_list: List[torch.Tensor]):" in gm.code
    assert "return list((add, mul))" in gm.code
    result = gm(vals)
    assert isinstance(result, list)
    torch.testing.assert_close(result, expected)
    # process_inputs / process_outputs convert for a module generated without the codegen
    bare = fx.GraphModule({}, copy.deepcopy(gm.graph))
    bare.graph.set_codegen(fx.graph.CodeGen())
    bare.recompile()
    assert "def forward(self, a, b):" in bare.code
    outputs = gm.graph.process_outputs(bare(*gm.graph.process_inputs(vals)))
    assert isinstance(outputs, list)
    torch.testing.assert_close(outputs, expected)


def test_custom_codegen_code_is_torch_fx_code() -> None:
    codes = []
    for fx in (torch.fx, fxcore):
        gm = fx.symbolic_trace(_two_outputs)
        gm.graph.set_codegen(_list_codegen(fx))
        gm.recompile()
        codes.append(gm.code)
    assert codes[0] == codes[1]


def test_a_deepcopied_graph_keeps_its_codegen() -> None:
    gm = fxcore.symbolic_trace(_two_outputs)
    gm.graph.set_codegen(_list_codegen(fxcore))
    copied = copy.deepcopy(gm.graph)
    assert type(copied._codegen).__name__ == "ListCodeGen"
    assert copied._codegen is not gm.graph._codegen


class _SinCos(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a = torch.sin(a)
        b = torch.cos(b)
        return a + b


@BOTH
def test_line_map_and_prologue_start(fx: ModuleType) -> None:
    tracer = fx.Tracer()
    gm = fx.GraphModule(tracer.root if False else _SinCos(), tracer.trace(_SinCos()))
    # line in the function (def = 1 after the prologue's lines) -> index of the node
    assert {1: 2, 2: 3, 3: 4, 4: 5}.items() <= gm._lineno_map.items()
    assert gm._prologue_start == 4


@BOTH
def test_on_generate_code_transforms_the_body_and_shifts_the_map(fx: ModuleType) -> None:
    gm = fx.symbolic_trace(_SinCos())

    def add_print(body: list[str]) -> list[str]:
        return ["print('hello!')\n", *body]

    gm.graph.on_generate_code(lambda previous: add_print)
    gm.recompile()
    assert "    print('hello!')\n    sin = torch.sin(a)" in gm.code
    assert {2: 2, 3: 3, 4: 4, 5: 5}.items() <= gm._lineno_map.items()
    assert gm._prologue_start == 4


@BOTH
def test_on_generate_code_as_context_chains_and_restores(fx: ModuleType) -> None:
    gm = fx.symbolic_trace(_SinCos())
    seen: list[Any] = []

    def make(tag: str) -> Any:
        def make_transformer(previous: Any) -> Any:
            seen.append(previous)

            def transform(body: list[str]) -> list[str]:
                body = previous(body) if previous is not None else body
                return [f"# {tag}\n", *body]

            return transform

        return make_transformer

    with gm.graph.on_generate_code(make("outer")):
        with gm.graph.on_generate_code(make("inner")):
            gm.recompile()
            assert "# inner\n    # outer\n" in gm.code
        gm.recompile()
        assert "# outer" in gm.code and "# inner" not in gm.code
    gm.recompile()
    assert "# outer" not in gm.code
    assert seen[0] is None and seen[1] is not None


@BOTH
def test_empty_graph_with_custom_codegen_still_compiles(fx: ModuleType) -> None:
    graph = fx.Graph()
    graph.set_codegen(fx.graph.CodeGen())
    gm = fx.GraphModule(torch.nn.Module(), graph)
    assert gm() is None


def _property_graph(fx: ModuleType) -> Any:
    graph = fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(4, 6)[:, 1:]
    size = graph.create_size_node(x, 1)
    stride = graph.create_stride_node(x, 0)
    offset = graph.create_storage_offset_node(x)
    graph.output((size, stride, offset))
    return graph, size, stride, offset


@BOTH
def test_size_stride_and_storage_offset_nodes(fx: ModuleType) -> None:
    graph, size, stride, offset = _property_graph(fx)
    assert size.target is torch.ops.aten.sym_size.int
    assert stride.target is torch.ops.aten.sym_stride.int
    assert offset.target is torch.ops.aten.sym_storage_offset.default
    assert (size.meta["val"], stride.meta["val"], offset.meta["val"]) == (5, 6, 1)
    gm = fx.GraphModule(torch.nn.Module(), graph)
    assert gm(torch.empty(2, 7)[:, 3:]) == (4, 7, 3)


def test_size_node_code_is_torch_fx_code() -> None:
    codes = [
        fx.GraphModule(torch.nn.Module(), _property_graph(fx)[0]).code for fx in (torch.fx, fxcore)
    ]
    assert codes[0] == codes[1]


def test_size_node_without_example_value_has_no_meta() -> None:
    graph = fxcore.Graph()
    node = graph.create_size_node(graph.placeholder("x"), 0)
    assert "val" not in node.meta and "example_value" not in node.meta


def _tensor_pair(fx: ModuleType) -> type:
    class TensorPair(metaclass=fx.ProxyableClassMeta):
        def __init__(self, left: Any, right: Any) -> None:
            self.left, self.right = left, right

        def add(self, other: Any) -> Any:
            return TensorPair(self.left + other.left, self.right + other.right)

    return TensorPair


@BOTH
def test_proxyable_class_built_from_traced_values_is_a_call(fx: ModuleType) -> None:
    pair = _tensor_pair(fx)

    def build(x: torch.Tensor, y: torch.Tensor) -> Any:
        return pair(x, y).add(pair(y, x))

    gm = fx.symbolic_trace(build)
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert calls.count(pair) == 2
    x, y = torch.randn(3), torch.randn(3)
    out = gm(x, y)
    torch.testing.assert_close((out.left, out.right), (x + y, y + x))


@BOTH
def test_proxyable_class_built_from_constants_becomes_an_attribute(fx: ModuleType) -> None:
    pair = _tensor_pair(fx)

    def add_zero(p: Any) -> Any:
        return p.add(pair(torch.zeros(3), torch.zeros(3)))

    gm = fx.symbolic_trace(add_zero)
    attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert attrs == ["_TensorPair_constant_0"]
    assert isinstance(gm._TensorPair_constant_0, pair)
    given = pair(torch.ones(3), torch.full((3,), 2.0))
    out = gm(given)
    torch.testing.assert_close((out.left, out.right), (given.left, given.right))


@BOTH
def test_proxyable_class_outside_tracing_is_plain(fx: ModuleType) -> None:
    pair = _tensor_pair(fx)
    made = pair(1, 2)
    assert (type(made), made.left, made.right) == (pair, 1, 2)


class _Indexes(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.arange(10.0)[x.size(0)]


@pytest.mark.parametrize("fx", [torch.fx, fxcore], ids=["torch.fx", "fxcore"])
def test_wrapped_methods_to_patch_records_calls_of_that_method(fx: ModuleType) -> None:
    patched = fx._symbolic_trace._wrapped_methods_to_patch
    patched.append((torch.Tensor, "__getitem__"))
    try:
        gm = fx.symbolic_trace(_Indexes())
    finally:
        patched.pop()
    methods = [n.target for n in gm.graph.nodes if n.op == "call_method"]
    assert "__getitem__" in methods
    assert torch.Tensor.__getitem__ is not None and not hasattr(
        torch.Tensor.__getitem__, "__wrapped__"
    )
    assert gm(torch.zeros(4)) == 4.0


class _Foo:
    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b


pytree.register_pytree_node(_Foo, lambda x: ([x.a, x.b], None), lambda x, _: _Foo(x[0], x[1]))
torch.fx._pytree.register_pytree_flatten_spec(_Foo, lambda x, _: [x.a, x.b])


def _foo_sum(x: _Foo) -> torch.Tensor:
    return x.a + x.b


def test_register_pytree_flatten_spec_unpacks_a_custom_container() -> None:
    calls: list[Any] = []

    def flatten(value: _Foo, spec: Any) -> list[Any]:
        calls.append(spec)
        return [value.a, value.b]

    fxcore._pytree.register_pytree_flatten_spec(_Foo, flatten)
    gm = fxcore.symbolic_trace(_foo_sum, concrete_args={"x": _Foo(fxcore.PH, fxcore.PH)})
    assert "tree_flatten_spec" in gm.code
    assert sum(n.op == "placeholder" for n in gm.graph.nodes) == 2
    value = _Foo(torch.ones(2), torch.full((2,), 3.0))
    torch.testing.assert_close(gm(value), torch.full((2,), 4.0))
    assert calls and calls[-1].type is _Foo
    reference = torch.fx.symbolic_trace(
        _foo_sum, concrete_args={"x": _Foo(torch.fx.PH, torch.fx.PH)}
    )
    torch.testing.assert_close(reference(value), gm(value))
    restored = pickle.loads(pickle.dumps(gm))
    torch.testing.assert_close(restored(value), gm(value))


def test_pytree_codegen_converts_inputs_and_outputs() -> None:
    def split(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {"sum": d["a"] + d["b"], "a": d["a"]}

    for fx in (torch.fx, fxcore):
        gm = fx.symbolic_trace(split, concrete_args={"d": {"a": fx.PH, "b": fx.PH}})
        bare = fx.GraphModule({}, copy.deepcopy(gm.graph))
        bare.graph.set_codegen(fx.graph.CodeGen())
        bare.recompile()
        value = {"a": torch.ones(2), "b": torch.ones(2)}
        leaves = gm.graph.process_inputs(value)
        assert len(leaves) == 2
        out = gm.graph.process_outputs(bare(*leaves))
        assert set(out) == {"sum", "a"} and torch.equal(out["sum"], torch.full((2,), 2.0))


def test_codegen_is_exported_like_torch_fx() -> None:
    assert fxcore.CodeGen is CodeGen
    assert operator.attrgetter("ProxyableClassMeta")(fxcore) is fxcore._proxyable.ProxyableClassMeta


def test_retracing_a_namedtuple_input_unpacks_it_by_position() -> None:
    point = collections.namedtuple("point", ["x", "y"])

    def add(p: Any) -> torch.Tensor:
        return p.x + p.y

    value = point(torch.ones(2), torch.full((2,), 2.0))
    for fx in (torch.fx, fxcore):
        gm = fx.symbolic_trace(add, concrete_args={"p": point(fx.PH, fx.PH)})
        retraced = fx.symbolic_trace(gm)  # traces the generated tree_flatten_spec call
        assert sum(n.op == "placeholder" for n in retraced.graph.nodes) == 1
        torch.testing.assert_close(retraced(value), torch.full((2,), 3.0))
