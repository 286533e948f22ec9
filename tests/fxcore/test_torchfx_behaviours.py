"""Behaviours torch.fx's own test suite expects, each built with torch.fx and with fxcore.

One test (or a few) per item of issue 13's "Behaviour that differs today" list. Where the
behaviour is observable on both libraries the same program runs under each and the results
are compared; fxcore's own additions (source spans, the note on errors) are checked too.
"""

import collections
import copy
import dataclasses
import dis
import io
import os
import pickle
import sys
import typing
from typing import Any, NamedTuple

import pytest
import torch
import torch.fx
import torch.fx._symbolic_trace
import torch.fx.node
import torch.utils._pytree as pytree
from torch import nn

import fxcore
import fxcore._symbolic_trace
import fxcore.immutable_collections
import fxcore.node

LIBS = [pytest.param(torch.fx, id="torch.fx"), pytest.param(fxcore, id="fxcore")]
BOTH = (torch.fx, fxcore)
THIS_FILE = os.path.basename(__file__)


def graph_rows(graph: Any) -> list[tuple[str, str, str, str, str]]:
    """A graph as comparable rows: (op, name, target, args, kwargs) with nodes by name."""

    def show(a: Any) -> str:
        if isinstance(a, torch.fx.Node | fxcore.Node):
            return f"%{a.name}"
        if isinstance(a, tuple | list):
            return type(a).__name__ + "(" + ", ".join(show(x) for x in a) + ")"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k}: {show(v)}" for k, v in a.items()) + "}"
        return repr(a)

    return [
        (
            n.op,
            n.name,
            getattr(n.target, "__qualname__", str(n.target)),
            show(n.args),
            show(n.kwargs),
        )
        for n in graph.nodes
    ]


# -- 1. ``forward(self, *args)`` traced with a tuple of placeholders ---------------------------


class VarArgs(nn.Module):
    def forward(self, *args: torch.Tensor, **kwargs: torch.Tensor) -> torch.Tensor:
        return args[0] + args[1]


def test_varargs_forward_traces_with_a_tuple_of_placeholders() -> None:
    inputs = (torch.rand(2), torch.rand(2))
    traced = [fx.symbolic_trace(VarArgs(), concrete_args=(fx.PH, fx.PH)) for fx in BOTH]
    assert traced[1].code == traced[0].code
    assert "def forward(self, input_0, input_1)" in traced[1].code
    assert graph_rows(traced[1].graph) == graph_rows(traced[0].graph)
    torch.testing.assert_close(traced[1](*inputs), VarArgs()(*inputs))


# -- 2. a traced_func_name the root does not have ----------------------------------------------


class TwoForwards(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y

    def minus_forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x - y


@pytest.mark.parametrize("fx", LIBS)
def test_traced_func_name_picks_the_method_and_a_missing_one_is_an_assertion(fx: Any) -> None:
    tracer = fx.Tracer()
    tracer.traced_func_name = "minus_forward"
    x, y = torch.randn(3), torch.randn(3)
    module = TwoForwards()
    torch.testing.assert_close(fx.GraphModule(module, tracer.trace(module))(x, y), x - y)
    tracer.traced_func_name = "add_forward"
    with pytest.raises(
        AssertionError, match="traced_func_name=add_forward doesn't exist in TwoForwards"
    ):
        tracer.trace(module)


# -- 3. objects that build their own argument --------------------------------------------------


class CustomArg:
    def __init__(self, x: Any, y: Any) -> None:
        self.x = x
        self.y = y

    def __fx_create_arg__(self, tracer: Any) -> Any:
        return tracer.create_node(
            "call_function",
            CustomArg,
            args=(tracer.create_arg(self.x), tracer.create_arg(self.y)),
            kwargs={},
        )


class TakesCustomArg(nn.Module):
    def forward(self, o: CustomArg) -> Any:
        return o.y


class BuildsCustomArg(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = TakesCustomArg()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
        return self.inner(CustomArg(x, y))


def test_fx_create_arg_is_asked_to_build_the_argument() -> None:
    results = []
    for fx in BOTH:

        class LeafTracer(fx.Tracer):  # type: ignore[name-defined, misc]
            def is_leaf_module(self, m: nn.Module, qualified_name: str) -> bool:
                return type(m) is TakesCustomArg

        module = BuildsCustomArg()
        gm = fx.GraphModule(module, LeafTracer().trace(module))
        results.append(gm)
    assert "CustomArg(x, y)" in results[1].code
    assert results[1].code == results[0].code
    assert graph_rows(results[1].graph) == graph_rows(results[0].graph)
    x, y = torch.rand(2), torch.rand(2)
    torch.testing.assert_close(results[1](x, y), y)


# -- 4. dataclasses in the output --------------------------------------------------------------


@dataclasses.dataclass
class Outputs:
    foo: torch.Tensor
    bar: torch.Tensor


class ReturnsDataclass(nn.Module):
    def forward(self, d: torch.Tensor) -> Outputs:
        return Outputs(foo=d + d, bar=d * 3)


class ReturnsNestedDataclass(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m = ReturnsDataclass()

    def forward(self, x: torch.Tensor) -> Outputs:
        tmp = self.m(x)
        return Outputs(foo=tmp.foo, bar=tmp.bar)


@pytest.mark.parametrize("module_type", [ReturnsDataclass, ReturnsNestedDataclass])
def test_returned_dataclass_is_rebuilt_by_a_call_of_its_class(module_type: type[nn.Module]) -> None:
    module = module_type()
    traced = [fx.symbolic_trace(module) for fx in BOTH]
    assert traced[1].code == traced[0].code
    assert graph_rows(traced[1].graph) == graph_rows(traced[0].graph)
    output = next(n for n in traced[1].graph.nodes if n.op == "output").args[0]
    assert (output.op, output.target, output.args) == ("call_function", Outputs, ())
    assert list(output.kwargs) == ["foo", "bar"]
    x = torch.rand(3)
    result, expected = traced[1](x), module(x)
    assert type(result) is Outputs
    torch.testing.assert_close(dataclasses.asdict(result), dataclasses.asdict(expected))


# -- 5. immutable collections flatten with torch's pytree --------------------------------------


def test_immutable_collections_flatten_and_unflatten_like_torch_fx_ones() -> None:
    tensor = torch.randn(2)
    ours = fxcore.immutable_collections
    theirs = torch.fx.immutable_collections
    for kind, value in (
        ("immutable_list", [3, [tensor, 42]]),
        ("immutable_dict", {"a": 3, "b": [tensor, 42]}),
    ):
        mine = getattr(ours, kind)(value)
        reference = getattr(theirs, kind)(value)
        leaves, spec = pytree.tree_flatten(mine)
        reference_leaves, _ = pytree.tree_flatten(reference)
        assert leaves == [3, tensor, 42] == reference_leaves
        rebuilt = pytree.tree_unflatten(leaves, spec)
        assert type(rebuilt) is getattr(ours, kind)
        assert rebuilt == mine
        paths = [path for path, _ in pytree.tree_flatten_with_path(mine)[0]]
        assert paths == [path for path, _ in pytree.tree_flatten_with_path(reference)[0]]
    # node arguments are immutable collections: flattening them finds the nodes
    gm = fxcore.symbolic_trace(lambda x: torch.cat([x, x], dim=0))
    cat = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert pytree.tree_leaves(cat.args) == [cat.args[0][0], cat.args[0][1]]


# -- 6. deep copies of proxies -----------------------------------------------------------------


class Doubles(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 * x


@pytest.mark.parametrize("fx", LIBS)
@pytest.mark.parametrize("with_tracer", [False, True], ids=["no_tracer", "tracer"])
def test_deepcopy_of_a_proxy_copies_its_node_and_tracer(fx: Any, with_tracer: bool) -> None:
    class NamedTracer(fx.Tracer):  # type: ignore[name-defined, misc]
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    traced = fx.symbolic_trace(Doubles())
    node = list(traced.graph.nodes)[-2]
    tracer = NamedTracer("mine") if with_tracer else None
    proxy = fx.Proxy(node, tracer)
    node.proxy = proxy  # the node refers back to the proxy: copying must not loop
    copied = copy.deepcopy(proxy)
    assert isinstance(copied, fx.Proxy)
    assert copied.node is not node
    assert (copied.node.name, copied.node.target) == (node.name, node.target)
    assert copied.tracer is not proxy.tracer
    if with_tracer:
        assert copied.tracer.name == "mine"


# -- 7. stack traces ---------------------------------------------------------------------------


def times(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * b


class CallsHelper(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = a + b
        c = times(a, c)
        return c


def _line_of(text: str, function: Any) -> int:
    lines, first = __import__("inspect").getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_record_stack_traces_fills_node_stack_trace_with_user_frames_only() -> None:
    traces = {}
    for fx in BOTH:
        tracer = fx.Tracer()
        tracer.record_stack_traces = True
        graph = tracer.trace(CallsHelper())
        traces[fx] = {n.name: n.stack_trace for n in graph.nodes}
        if fx is fxcore:
            ours = graph
    add_line = _line_of("c = a + b", CallsHelper.forward)
    call_line = _line_of("c = times(a, c)", CallsHelper.forward)
    mul_line = _line_of("return a * b", times)
    assert traces[fxcore] == {
        "a": None,
        "b": None,
        "add": f'File "{__file__}", line {add_line}, in forward\n    c = a + b',
        "mul": (
            f'File "{__file__}", line {call_line}, in forward\n    c = times(a, c)\n'
            f'  File "{__file__}", line {mul_line}, in times\n    return a * b'
        ),
        "output": None,
    }
    # torch.fx records the same user frames, followed by its own tracer's frames
    for name in ("add", "mul"):
        assert traces[torch.fx][name].startswith(traces[fxcore][name] + "\n")
    # fxcore's own span stays
    add = next(n for n in ours.nodes if n.name == "add")
    assert add.meta["source"].line == add_line
    assert add.stack_trace == add.meta["stack_trace"]


def test_stack_traces_are_off_by_default_and_survive_the_transformer() -> None:
    graph = fxcore.Tracer().trace(CallsHelper())
    assert all(n.stack_trace is None for n in graph.nodes)
    tracer = fxcore.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(CallsHelper())
    gm = fxcore.GraphModule(tracer.root, graph)
    transformed = fxcore.Transformer(gm).transform()
    before = {n.name: n.stack_trace for n in gm.graph.nodes}
    after = {n.name: n.stack_trace for n in transformed.graph.nodes}
    assert after == before
    assert after["add"] is not None
    loaded = pickle.loads(pickle.dumps(gm))
    assert {n.name: n.stack_trace for n in loaded.graph.nodes} == before


# -- 8. Transformer keeps node meta ------------------------------------------------------------


class UsesWeight(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight + x


@pytest.mark.parametrize("fx", LIBS)
def test_transformer_keeps_get_attr_meta(fx: Any) -> None:
    tracer = fx.Tracer()
    graph = tracer.trace(UsesWeight())
    gm = fx.GraphModule(tracer.root, graph)
    marks = {"nn_module_stack": "self", "stack_trace": "stack_trace", "source_fn_stack": "fn"}
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            node.meta.update(marks)
    transformed = fx.Transformer(gm).transform()
    get_attrs = [n for n in transformed.graph.nodes if n.op == "get_attr"]
    assert len(get_attrs) == 1
    assert {k: get_attrs[0].meta.get(k) for k in marks} == marks


def test_transformer_keeps_nn_module_stack_and_source_of_traced_nodes() -> None:
    class Inner(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Inner()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) + 1

    gm = fxcore.symbolic_trace(Outer())
    transformed = fxcore.Transformer(gm).transform()
    for before, after in zip(gm.graph.nodes, transformed.graph.nodes, strict=True):
        if before.op in ("call_function", "call_method", "call_module", "get_attr"):
            assert after.meta.get("nn_module_stack") == before.meta.get("nn_module_stack")
            assert after.meta.get("source") == before.meta.get("source")
    relu = next(n for n in transformed.graph.nodes if n.target is torch.relu)
    assert list(relu.meta["nn_module_stack"]) == ["inner"]


def add_two(a, b):  # type: ignore[no-untyped-def]  # the custom signature takes bare names
    return a + b


@pytest.mark.parametrize("fx", LIBS)
def test_transformer_keeps_the_graphs_code_generator(fx: Any) -> None:
    class ListInput(fx.graph.CodeGen):  # type: ignore[name-defined, misc]
        def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
            names = ", ".join(free_vars)
            return (
                f"def forward(self, args_list){maybe_return_annotation}:\n    {names} = args_list"
            )

        def process_inputs(self, *inputs: Any) -> Any:
            return inputs[0]

    gm = fx.symbolic_trace(add_two)
    gm.graph.set_codegen(ListInput())
    gm.recompile()
    transformed = fx.Transformer(gm).transform()
    assert "def forward(self, args_list):" in transformed.code
    a, b = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(transformed([a, b]), a + b)
    torch.testing.assert_close(fx.Interpreter(transformed).run([a, b]), a + b)


# -- 9. placeholders carrying metadata ---------------------------------------------------------


def add_ints(a: int, b: int) -> int:
    return a + b


def same_entries(a: dict[str, str]) -> bool:
    return a["f1"] == a["f2"]


@pytest.mark.parametrize("fx", LIBS)
def test_placeholder_objects_copy_their_attributes_onto_placeholder_nodes(fx: Any) -> None:
    ph_with_meta = sys.modules[fx.__name__ + "._symbolic_trace"].PHWithMeta
    ph_base = sys.modules[fx.__name__ + "._symbolic_trace"].PHBase
    gm = fx.symbolic_trace(
        add_ints, concrete_args={"a": ph_with_meta(ph_key="a"), "b": ph_with_meta(ph_key="b")}
    )
    assert [(n.name, n.ph_key) for n in gm.graph.nodes if n.op == "placeholder"] == [
        ("a_1", "a"),
        ("b_1", "b"),
    ]
    gm = fx.symbolic_trace(
        same_entries,
        concrete_args={"a": {"f1": ph_with_meta(ph_key="f1"), "f2": ph_with_meta(ph_key="f2")}},
    )
    assert [(n.name, n.ph_key) for n in gm.graph.nodes if n.op == "placeholder"] == [
        ("a_1", "f1"),
        ("a_2", "f2"),
    ]

    class Tagged(ph_base):  # type: ignore[misc, valid-type]
        def __init__(self, tag: str) -> None:
            super().__init__()
            self.tag = tag

    class TaggingTracer(fx.Tracer):  # type: ignore[name-defined, misc]
        def create_node(self, *args: Any, **kwargs: Any) -> Any:
            node = super().create_node(*args, **kwargs)
            node.tag = "foo"
            return node

    graph = TaggingTracer().trace(add_ints, concrete_args={"a": Tagged("bar"), "b": Tagged("bar")})
    assert [n.tag for n in graph.nodes] == ["foo"] * 4  # a node's own attribute wins


Point = collections.namedtuple("Point", ["x", "y"])


def point_sum(x: Any) -> Any:
    return x.x + x.y


@pytest.mark.parametrize("fx", LIBS)
def test_named_tuple_of_placeholders_retraces_through_generated_code(fx: Any) -> None:
    structure = Point(fx.PH, fx.PH)
    value = Point(torch.randn(3), torch.randn(3))
    traced = fx.symbolic_trace(point_sum, concrete_args={"x": structure})
    retraced = fx.symbolic_trace(fx.symbolic_trace(traced), concrete_args={"x": structure})
    assert "tree_flatten_spec" in retraced.code
    assert sum(n.op == "placeholder" for n in retraced.graph.nodes) == 2
    torch.testing.assert_close(retraced(value), value.x + value.y)


# -- 10. NamedTuples: custom argument formatting and construction nodes ------------------------


class Pair(NamedTuple):
    x: Any
    y: Any

    def _custom_fx_repr_fn(self) -> str:
        fmt = (
            fxcore.node._format_arg
            if any(isinstance(v, fxcore.Node) for v in self)
            else torch.fx.node._format_arg
        )
        return f"Pair(x={fmt(self.x)}, y={fmt(self.y)})"


def takes_pairs(p1: Pair, *, p2: Pair) -> Any:
    return p1.x + p2.y


torch.fx.wrap("takes_pairs")
fxcore.wrap("takes_pairs")


class BuildsPairs(nn.Module):
    def forward(self, inp: torch.Tensor) -> Any:
        return takes_pairs(Pair(inp, 1.2), p2=Pair(3.4, inp))


class ReturnsPair(nn.Module):
    def forward(self, x: torch.Tensor) -> Pair:
        return Pair(x, x)


@pytest.mark.parametrize("module_type", [BuildsPairs, ReturnsPair])
def test_named_tuple_built_in_traced_code_is_a_call_of_its_type(
    module_type: type[nn.Module],
) -> None:
    module = module_type()
    traced = [fx.symbolic_trace(module) for fx in BOTH]
    assert graph_rows(traced[1].graph) == graph_rows(traced[0].graph)
    assert traced[1].code == traced[0].code.replace("torch.fx._symbolic_trace.wrap(", "wrap(")
    pairs = [n for n in traced[1].graph.nodes if n.target is Pair]
    assert pairs and all(n.op == "call_function" for n in pairs)
    x = torch.rand(3)
    result, expected = traced[1](x), module(x)
    assert type(result) is type(expected)
    torch.testing.assert_close(result, expected)


def test_format_arg_uses_a_types_custom_repr() -> None:
    results = []
    for fx in BOTH:
        gm = fx.symbolic_trace(BuildsPairs())
        placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
        call = next(n for n in gm.graph.nodes if n.target is takes_pairs)
        call.update_arg(0, Pair(placeholder, 1.2))
        call.update_kwarg("p2", Pair(3.4, placeholder))
        assert isinstance(call.args[0], Pair) and isinstance(call.kwargs["p2"], Pair)
        node_module = sys.modules[fx.__name__ + ".node"]
        results.append(
            (node_module._format_arg(call.args[0]), node_module._format_arg(call.kwargs["p2"]))
        )
        gm.graph.eliminate_dead_code()
        gm.recompile()
        x = torch.rand(3)
        torch.testing.assert_close(gm(x), x + x)
    assert results[1] == results[0] == ("Pair(x=%inp, y=1.2)", "Pair(x=3.4, y=%inp)")
    assert fxcore.node._format_arg(list(range(5)), max_list_len=2) == torch.fx.node._format_arg(
        list(range(5)), max_list_len=2
    )


# -- 11. mutable operations --------------------------------------------------------------------


def writes_out(x: torch.Tensor) -> torch.Tensor:
    y = torch.rand_like(x)
    torch.sigmoid(x, out=y)
    return y


def functional(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) + torch.add(x, 1, alpha=2) + torch.clamp(x, min=0.0) + torch.arange(3)


@pytest.mark.parametrize("fx", LIBS)
def test_check_mutable_operations_rejects_out_variants_only(fx: Any) -> None:
    class Checking(fx.Tracer):  # type: ignore[name-defined, misc]
        check_mutable_operations = True

    with pytest.raises(
        RuntimeError, match=r"Tried to trace mutable operation aten::sigmoid\.out\("
    ):
        Checking().trace(writes_out)
    graph = Checking().trace(functional)
    assert sum(n.op == "call_function" for n in graph.nodes) == 6
    fx.Tracer().trace(writes_out)  # off by default


# -- 12. boxed_run -----------------------------------------------------------------------------


class AddTwo(nn.Module):
    def forward(self, lhs: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor:
        return lhs + rhs


@pytest.mark.parametrize("fx", LIBS)
def test_boxed_run_checks_the_argument_count_and_empties_the_list(fx: Any) -> None:
    interpreter = fx.Interpreter(fx.symbolic_trace(AddTwo()))
    lhs, rhs = torch.tensor(1.0), torch.tensor(2.0)
    good = [lhs, rhs]
    torch.testing.assert_close(interpreter.boxed_run(good), lhs + rhs)
    assert good == []
    extra = [lhs, rhs, torch.tensor(3.0)]
    with pytest.raises(
        RuntimeError,
        match=r"expected 2 arguments for placeholders but received 3 \(extra arguments\)",
    ):
        interpreter.boxed_run(extra)
    assert len(extra) == 3
    missing = [lhs]
    with pytest.raises(RuntimeError, match=r"received 1 \(missing arguments\)"):
        interpreter.boxed_run(missing)
    assert len(missing) == 1


# -- 13. the generated code's file name --------------------------------------------------------


@pytest.mark.parametrize("fx", LIBS)
def test_generated_forward_file_name_names_the_traced_source(fx: Any) -> None:
    gm = fx.symbolic_trace(Doubles())
    filename = gm.forward.__code__.co_filename
    line = _line_of("def forward", Doubles.forward)
    assert filename.startswith("<eval_with_key>.")
    assert filename.endswith(f" from {__file__}:{line} in forward")


# -- 14. errors raised by generated code -------------------------------------------------------


class Dot(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.randn(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.dot(self.W, x)


@pytest.mark.parametrize("fx", LIBS)
def test_error_raised_in_generated_code_is_reported_on_stderr(
    fx: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    traced = fx.symbolic_trace(Dot())
    with pytest.raises(TypeError) as info:
        traced(5)
    err = capsys.readouterr().err
    line = traced.code.splitlines().index("    dot = torch.dot(w, x);  w = x = None") + 1
    header = f"Call using an FX-traced Module, line {line} of the traced Module's generated"
    assert header + " forward function:" in err
    assert "    dot = torch.dot(w, x);  w = x = None\n" in err
    assert "\n" + "~" * 36 + "~~~ <--- HERE\n" in err
    if fx is fxcore:  # fxcore also says it on the exception itself
        assert info.value.__notes__ == [
            f"While executing generated line {line} (node 'dot', op call_function): "
            "dot = torch.dot(w, x);  w = x = None"
        ]


class LinearOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


@pytest.mark.parametrize("fx", LIBS)
def test_error_raised_below_generated_code_is_not_reported(
    fx: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    traced = fx.symbolic_trace(LinearOnly())
    with pytest.raises(RuntimeError):
        traced(torch.rand(5, 5))
    assert "Call using an FX-traced Module" not in capsys.readouterr().err


def test_nested_graph_module_error_is_reported_once(capsys: pytest.CaptureFixture[str]) -> None:
    inner = fxcore.symbolic_trace(Dot())

    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x) + 1

    class Leaf(fxcore.Tracer):
        def is_leaf_module(self, m: nn.Module, qualified_name: str) -> bool:
            return m is inner

    holder = Holder()
    outer = fxcore.GraphModule(holder, Leaf().trace(holder))
    with pytest.raises(TypeError) as info:
        outer(5)
    assert capsys.readouterr().err.count("Call using an FX-traced Module") == 1
    assert len(info.value.__notes__) == 1


# -- 15. print_readable with GraphModule children ----------------------------------------------


class PlusOne(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def test_print_readable_with_a_graph_module_child_has_no_trailing_whitespace() -> None:
    texts = []
    for fx in BOTH:
        graph = fx.Graph()
        x = graph.placeholder("x")
        graph.output(graph.call_function(torch.mul, (graph.call_module("subgraph_0", (x,)), 2)))
        root = nn.Module()
        root.subgraph_0 = fx.symbolic_trace(PlusOne())
        text = fx.GraphModule(root, graph).print_readable(print_output=False)
        assert all(line == line.rstrip() for line in text.split("\n"))
        texts.append(text)
    # the comments differ: fxcore names the source line, torch.fx has no stack trace
    strip = "\n".join(line for line in texts[1].split("\n") if "# File:" not in line)
    assert strip == "\n".join(
        line for line in texts[0].split("\n") if "# No stacktrace" not in line
    )


# -- 16. replicas for DataParallel -------------------------------------------------------------


@pytest.mark.parametrize("fx", LIBS)
def test_replica_for_data_parallel_runs_forward(fx: Any) -> None:
    gm = fx.symbolic_trace(PlusOne())
    replica = gm._replicate_for_data_parallel()
    x = torch.randn(5, 3)
    torch.testing.assert_close(replica(x), gm(x))
    assert replica._is_replica
    assert replica.code == gm.code


# -- 17. saving keeps what the graph does not use ----------------------------------------------


@pytest.mark.parametrize("fx", LIBS)
@pytest.mark.parametrize("how", ["torch.save", "pickle"])
def test_save_and_load_keep_unused_submodules_buffers_and_parameters(fx: Any, how: str) -> None:
    gm = fx.symbolic_trace(PlusOne())
    gm.add_submodule("foo", PlusOne())
    gm.dummy_buffer = nn.Buffer(torch.full((1,), 7.0))
    gm.register_parameter("dummy_parameter", nn.Parameter(torch.full((1,), 3.0)))
    if how == "torch.save":
        buffer = io.BytesIO()
        torch.save(gm, buffer)
        buffer.seek(0)
        loaded = torch.load(buffer, weights_only=False)
    else:
        loaded = pickle.loads(pickle.dumps(gm))
    assert isinstance(loaded.foo, PlusOne)
    torch.testing.assert_close(loaded.dummy_buffer, torch.full((1,), 7.0))
    torch.testing.assert_close(loaded.dummy_parameter, torch.full((1,), 3.0))
    assert set(loaded.state_dict()) == set(gm.state_dict())
    x = torch.rand(2)
    torch.testing.assert_close(loaded(x), x + 1)


# -- 18. TorchScript ---------------------------------------------------------------------------


class ScriptSub(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(4, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w + x


class ScriptMain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.sub_mod = ScriptSub()
        self.w = nn.Parameter(torch.rand(3))

    def forward(self, A: torch.Tensor, B: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        t = torch.sigmoid(A) + self.lin(c)
        return self.sub_mod(t.data + self.w + t + 1 - A + B // A + -A + A.add(B, alpha=3))


class TensorPair(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor


class TakesPairAndInt(nn.Module):
    def forward(self, p: TensorPair, z: torch.Tensor, i: int) -> dict[str, torch.Tensor]:
        return {"a": p.x + p.y + z + i}


class ReturnsStrings(nn.Module):
    def forward(self, x: typing.List[str]) -> typing.List[str]:  # noqa: UP006 - the old spelling
        return x


class HasConstant(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch._assert(x.shape[1] > 4, "assert_foobar")
        return x + torch.ones(3, 5)


SCRIPT_CASES = {
    "modules_and_params": (
        ScriptMain,
        lambda: (torch.rand(4, 3), torch.rand(4, 3) + 1, torch.rand(4, 4)),
    ),
    "namedtuple_input": (
        TakesPairAndInt,
        lambda: (TensorPair(torch.rand(5), torch.rand(5)), torch.rand(5), 3),
    ),
    "typing_list": (ReturnsStrings, lambda: (["a", "b"],)),
    "tensor_constant_and_assert": (HasConstant, lambda: (torch.rand(3, 5),)),
}


@pytest.mark.parametrize("case", sorted(SCRIPT_CASES))
def test_torch_jit_script_of_a_graph_module(case: str) -> None:
    module_type, make_inputs = SCRIPT_CASES[case]
    module = module_type()
    torch.manual_seed(0)
    scripted = [torch.jit.script(fx.symbolic_trace(copy.deepcopy(module))) for fx in BOTH]
    assert scripted[1].code == scripted[0].code
    inputs = make_inputs()
    result, expected = scripted[1](*inputs), module(*inputs)
    if isinstance(expected, list):
        assert result == expected
    else:
        torch.testing.assert_close(result, expected)


def test_scripted_graph_module_raises_script_errors() -> None:
    scripted = torch.jit.script(fxcore.symbolic_trace(HasConstant()))
    with pytest.raises(torch.jit.Error, match="assert_foobar"):
        scripted(torch.rand(3, 3))


def _unpacks(targets: int) -> Any:
    """``forward`` unpacking a traced value into ``targets`` names (``EXTENDED_ARG`` past 255),
    then iterating over one in a loop (not an unpacking: torch.fx refuses it)."""
    names = [f"v{i}" for i in range(targets)]
    namespace: dict[str, Any] = {}
    exec(f"def unpack(x):\n    {', '.join(names)}, = x\n    return {names[-1]}\n"
         "def loop(x):\n    return [v for v in x]\n", namespace)
    return namespace


@pytest.mark.parametrize("targets", [1, 2, 255, 256, 300])
def test_unpacking_a_proxy_makes_one_getitem_per_target_as_torch_fx_does(targets: int) -> None:
    functions = _unpacks(targets)
    graphs = [fx.symbolic_trace(functions["unpack"]) for fx in BOTH]
    assert graph_rows(graphs[1].graph) == graph_rows(graphs[0].graph)
    getitems = [n for n in graphs[1].graph.nodes if n.op == "call_function"]
    assert len(getitems) == targets
    for fx in BOTH:
        with pytest.raises(fx.proxy.TraceError, match="iterated"):
            fx.symbolic_trace(functions["loop"])


def test_the_unpacked_count_is_read_past_two_extended_arg_prefixes() -> None:
    unpack = _unpacks(70_000)["unpack"].__code__
    at = next(i.offset for i in dis.get_instructions(unpack) if i.opname == "UNPACK_SEQUENCE")
    assert fxcore.proxy._unpacked_count(unpack, at) == 70_000
    assert fxcore.proxy._unpacked_count(unpack, at - 2) is None  # its EXTENDED_ARG
