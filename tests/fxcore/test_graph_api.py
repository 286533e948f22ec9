"""Node, Graph and GraphModule APIs, checked against torch.fx wherever both can run."""

from __future__ import annotations

import builtins
import copy
import importlib
import operator
import sys
import warnings
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.fx
import torch.fx.passes.shape_prop
import torch.nn.functional as F
from torch import nn

import fxcore
from fxcore.immutable_collections import immutable_dict, immutable_list
from fxcore.passes.shape_prop import ShapeProp

LIB_LIST = [torch.fx, fxcore]
LIBS = pytest.mark.parametrize("lib", LIB_LIST, ids=["torch.fx", "fxcore"])


def normalise(code: str) -> str:
    return code.replace("torch.fx._symbolic_trace.wrap(", "wrap(")


def small_graph(lib: ModuleType) -> tuple[Any, dict[str, Any]]:
    """x -> add = x + 1 -> mul = add * x -> relu -> output; returns graph and nodes."""
    g = lib.Graph()
    x = g.placeholder("x")
    add = g.call_function(operator.add, (x, 1))
    mul = g.call_function(operator.mul, (add, x))
    relu = g.call_method("relu", (mul,))
    out = g.output(relu)
    return g, {"x": x, "add": add, "mul": mul, "relu": relu, "output": out}


def users(node: Any) -> list[str]:
    return [u.name for u in node.users]


def inputs(node: Any) -> list[str]:
    return [n.name for n in node.all_input_nodes]


# -- use-def -----------------------------------------------------------------------------------


@LIBS
def test_use_def_follows_args_and_kwargs(lib: ModuleType) -> None:
    _, n = small_graph(lib)
    x, add, mul = n["x"], n["add"], n["mul"]
    assert users(x) == ["add", "mul"]
    assert inputs(mul) == ["add", "x"]
    mul.args = (x, x)
    assert users(add) == []
    assert users(x) == ["add", "mul"]
    assert inputs(mul) == ["x"]
    mul.kwargs = {"other": add}
    assert users(add) == ["mul"]
    assert inputs(mul) == ["x", "add"]
    mul.update_arg(1, add)
    assert mul.args == (x, add)
    mul.update_kwarg("extra", [x, {"k": add}])
    assert inputs(mul) == ["x", "add"]
    mul.kwargs = {}
    mul.args = (1, 2)
    assert users(add) == [] and users(x) == ["add"]
    assert mul.all_input_nodes == []


@LIBS
def test_insert_arg(lib: ModuleType) -> None:
    _, n = small_graph(lib)
    n["relu"].insert_arg(1, n["x"])
    assert n["relu"].args == (n["mul"], n["x"])
    assert users(n["x"]) == ["add", "mul", "relu"]


def test_args_are_immutable() -> None:
    _, n = small_graph(fxcore)
    n["mul"].kwargs = {"k": [n["x"], 1]}
    kwargs = n["mul"].kwargs
    assert isinstance(kwargs, immutable_dict)
    assert isinstance(kwargs["k"], immutable_list)
    with pytest.raises(TypeError, match="'immutable_dict' object does not support mutation"):
        kwargs["other"] = 1  # type: ignore[index]
    with pytest.raises(TypeError, match="'immutable_list' object does not support mutation"):
        kwargs["k"].append(2)
    with pytest.raises(TypeError):
        kwargs["k"][0] = 3
    with pytest.raises(TypeError):
        kwargs.update({})
    with pytest.raises(TypeError):
        n["mul"].args[0] = n["x"]  # type: ignore[index]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda lst: lst.append(1),
        lambda lst: lst.__setitem__(0, 1),
        lambda lst: lst.extend([1]),
        lambda lst: lst.pop(),
        lambda lst: lst.sort(),
        lambda lst: lst.clear(),
    ],
)
def test_immutable_list_errors_match(mutate: Any) -> None:
    ours = immutable_list([3, 2])
    theirs = torch.fx.immutable_collections.immutable_list([3, 2])
    with pytest.raises(Exception) as ours_info:
        mutate(ours)
    with pytest.raises(Exception) as theirs_info:
        mutate(theirs)
    assert type(ours_info.value) is type(theirs_info.value)
    first_sentence = "'immutable_list' object does not support mutation."
    assert str(ours_info.value).startswith(first_sentence)
    assert str(theirs_info.value).startswith(first_sentence)
    assert ours == [3, 2]


def test_immutable_collections_pickle_and_hash() -> None:
    import pickle

    lst = immutable_list([1, (2, 3)])
    dct = immutable_dict({"a": 1})
    assert pickle.loads(pickle.dumps(lst)) == lst
    assert type(pickle.loads(pickle.dumps(lst))) is immutable_list
    assert pickle.loads(pickle.dumps(dct)) == dct
    assert hash(lst) == hash(immutable_list([1, (2, 3)]))
    assert hash(dct) == hash(immutable_dict({"a": 1}))


# -- replacing uses ----------------------------------------------------------------------------


@LIBS
def test_replace_all_uses_with(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    x, add, mul = n["x"], n["add"], n["mul"]
    with g.inserting_after(add):
        sub = g.call_function(operator.sub, (x, 2))
    replaced = add.replace_all_uses_with(sub)
    assert [r.name for r in replaced] == ["mul"]
    assert mul.args == (sub, x)
    assert users(add) == []
    assert users(sub) == ["mul"]


@LIBS
def test_replace_all_uses_with_delete_user_cb(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    x, add, mul, relu = n["x"], n["add"], n["mul"], n["relu"]
    with g.inserting_before(add):
        neg = g.call_function(operator.neg, (x,))
    replaced = x.replace_all_uses_with(neg, delete_user_cb=lambda user: user is mul)
    assert [r.name for r in replaced] == ["mul"]
    assert add.args == (x, 1)
    assert mul.args == (add, neg)
    assert users(x) == ["add", "neg"]
    assert relu.args == (mul,)


@LIBS
def test_replace_all_uses_with_propagate_meta(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    n["add"].meta["tag"] = 1
    with g.inserting_after(n["add"]):
        other = g.call_function(operator.sub, (n["x"], 1))
    other.meta.clear()
    n["add"].replace_all_uses_with(other, propagate_meta=True)
    assert other.meta["tag"] == 1
    with pytest.raises(AssertionError):
        n["mul"].replace_all_uses_with(other, propagate_meta=True)


@LIBS
def test_replace_input_with(lib: ModuleType) -> None:
    _, n = small_graph(lib)
    x, add, mul = n["x"], n["add"], n["mul"]
    mul.kwargs = {"alpha": x}
    mul.replace_input_with(x, add)
    assert mul.args == (add, add)
    assert mul.kwargs == {"alpha": add}
    assert users(x) == ["add"]
    assert inputs(mul) == ["add"]


# -- order and insertion -----------------------------------------------------------------------


def names(g: Any) -> list[str]:
    return [n.name for n in g.nodes]


@LIBS
def test_prepend_and_append_move_nodes(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    with g.inserting_before(n["output"]):
        extra = g.call_function(torch.neg, (n["x"],))
    assert names(g) == ["x", "add", "mul", "relu", "neg", "output"]
    n["add"].prepend(extra)
    assert names(g) == ["x", "neg", "add", "mul", "relu", "output"]
    n["mul"].append(extra)
    assert names(g) == ["x", "add", "mul", "neg", "relu", "output"]
    assert extra.prev is n["mul"] and extra.next is n["relu"]
    assert n["add"] < n["mul"] and n["relu"] > extra
    g.lint()


@LIBS
def test_insert_points(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    with g.inserting_before(n["mul"]):
        a = g.call_function(torch.abs, (n["x"],))
        b = g.call_function(torch.abs, (a,))
        with g.inserting_after(n["x"]):
            c = g.call_function(torch.sin, (n["x"],))
        d = g.call_function(torch.cos, (b,))
    with g.inserting_after(n["relu"]):
        e = g.call_function(torch.tan, (n["relu"],))
        f = g.call_function(torch.tan, (e,))
    with g.inserting_before(None):  # the start of the graph
        p = g.placeholder("y")
    with g.inserting_after(None):  # the end of the graph
        pass
    assert names(g) == [
        "y", "x", "sin", "add", "abs_1", "abs_2", "cos", "mul", "relu", "tan_1", "tan", "output",
    ]  # fmt: skip
    assert (a.name, b.name, c.name, d.name, f.name, p.name) == (
        "abs_1", "abs_2", "sin", "cos", "tan_1", "y",
    )  # fmt: skip
    g.call_function(torch.exp, (n["x"],))  # default insert point: before nothing = at the end
    assert names(g)[-1] == "exp"


def test_insert_points_match_torch_fx() -> None:
    def build(lib: ModuleType) -> list[str]:
        g, n = small_graph(lib)
        with g.inserting_before(n["mul"]):
            g.call_function(torch.abs, (n["x"],))
            with g.inserting_after(n["x"]):
                g.call_function(torch.sin, (n["x"],))
            g.call_function(torch.cos, (n["x"],))
        with g.inserting_after(n["relu"]):
            g.call_function(torch.tan, (n["relu"],))
            g.call_function(torch.tan, (n["relu"],))
        with g.inserting_before():
            g.placeholder("y")
        return names(g)

    assert build(fxcore) == build(torch.fx)


# -- erasing -----------------------------------------------------------------------------------


def test_erase_node_with_users_message_matches() -> None:
    messages = []
    for lib in (torch.fx, fxcore):
        g, n = small_graph(lib)
        with pytest.raises(RuntimeError) as info:
            g.erase_node(n["x"])
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert messages[1].startswith("Tried to erase Node x but it still had 2 users in the graph")


def test_erase_node_from_wrong_graph_message_matches() -> None:
    messages = []
    for lib in (torch.fx, fxcore):
        _, n = small_graph(lib)
        other, _ = small_graph(lib)
        with pytest.raises(RuntimeError) as info:
            other.erase_node(n["relu"].next.prev if False else n["output"])
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "Attempting to remove output from wrong graph!"


@LIBS
def test_erase_node(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    g.erase_node(n["output"])
    g.erase_node(n["relu"])
    assert names(g) == ["x", "add", "mul"]
    assert users(n["mul"]) == []
    assert len(g.nodes) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g.erase_node(n["relu"])
    assert any("already erased" in str(w.message) for w in caught)
    # the name is free again
    with g.inserting_after(n["mul"]):
        again = g.call_method("relu", (n["mul"],))
    assert again.name in ("relu", "relu_1")


def test_erased_name_reuse_matches() -> None:
    def build(lib: ModuleType) -> list[str]:
        g, n = small_graph(lib)
        g.erase_node(n["output"])
        g.erase_node(n["relu"])
        g.call_method("relu", (n["mul"],))
        g.call_function(operator.add, (n["x"], 2))
        return names(g)

    assert build(fxcore) == build(torch.fx)


# -- copying -----------------------------------------------------------------------------------


@LIBS
def test_node_copy_and_graph_copy(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    n["add"].meta["tag"] = "copied"
    new = lib.Graph()
    y = new.placeholder("y")
    copied_add = new.node_copy(n["add"], lambda old: y)
    assert copied_add.args == (y, 1)
    assert copied_add.meta["tag"] == "copied"
    assert copied_add.name == "add"

    target = lib.Graph()
    val_map: dict[Any, Any] = {}
    result = target.graph_copy(g, val_map)
    assert result is val_map[n["relu"]]
    target.output(result)
    assert str(target) == str(g)
    assert val_map[n["mul"]].args == (val_map[n["add"]], val_map[n["x"]])
    target.lint()


def test_graph_copy_return_output_node_matches() -> None:
    outs = []
    for lib in (torch.fx, fxcore):
        g, n = small_graph(lib)
        target = lib.Graph()
        value, output = target.graph_copy(g, {}, return_output_node=True)
        assert output is n["output"]
        outs.append((value.name, output.name))
    assert outs[0] == outs[1]


def test_deepcopy_graph_matches() -> None:
    texts = []
    for lib in (torch.fx, fxcore):
        g, _ = small_graph(lib)
        copied = copy.deepcopy(g)
        assert copied is not g
        assert str(copied) == str(g)
        texts.append(copied.python_code("self").src)
    assert texts[0] == texts[1]


# -- dead code ---------------------------------------------------------------------------------


def _dce_graph(lib: ModuleType) -> Any:
    g = lib.Graph()
    x = g.placeholder("x")
    g.call_function(operator.add, (x, 1))  # dead
    dead_chain = g.call_function(torch.sin, (x,))
    g.call_function(torch.cos, (dead_chain,))  # dead, and makes sin dead
    g.call_function(torch._assert, (True, "kept"))  # side effect
    g.call_function(torch.randn, (3,))  # random: mutates RNG state
    g.call_function(torch.ops.aten.add_.Tensor, (x, x))  # mutable schema
    g.call_function(torch.ops.aten.rand.default, ([2],))  # nondeterministic seeded op
    g.call_method("add_", (x, 1))  # call_method is never impure
    live = g.call_function(torch.relu, (x,))
    g.output(live)
    return g


@LIBS
def test_eliminate_dead_code(lib: ModuleType) -> None:
    g = _dce_graph(lib)
    assert g.eliminate_dead_code() is True
    assert g.eliminate_dead_code() is False
    assert "sin" not in names(g) and "cos" not in names(g) and "add" not in names(g)


def test_eliminate_dead_code_matches() -> None:
    kept = []
    for lib in (torch.fx, fxcore):
        g = _dce_graph(lib)
        g.eliminate_dead_code()
        kept.append(names(g))
    assert kept[1] == kept[0]


def test_eliminate_dead_code_custom_and_registered() -> None:
    def keep_me(x: torch.Tensor) -> torch.Tensor:
        return x

    fxcore.has_side_effect(keep_me)
    g = fxcore.Graph()
    x = g.placeholder("x")
    g.call_function(keep_me, (x,))
    g.call_function(torch.neg, (x,))
    g.output(x)
    g.eliminate_dead_code()
    assert names(g) == ["x", "keep_me", "output"]
    g.eliminate_dead_code(is_impure_node=lambda n: n.op in ("placeholder", "output"))
    assert names(g) == ["x", "output"]


def test_eliminate_dead_code_impure_module() -> None:
    class Impure(nn.Module):
        _is_impure = True

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.imp = Impure()
            self.lin = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.imp(x)
            self.lin(x)
            return x

    class Leafy(fxcore.Tracer):
        def is_leaf_module(self, m: nn.Module, name: str) -> bool:
            return isinstance(m, Impure) or super().is_leaf_module(m, name)

    root = M()
    gm = fxcore.GraphModule(root, Leafy().trace(root))
    gm.graph.eliminate_dead_code()
    assert names(gm.graph) == ["x", "imp", "output"]


# -- find_nodes --------------------------------------------------------------------------------


@LIBS
def test_find_nodes(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    with g.inserting_before(n["output"]):
        again = g.call_function(operator.add, (n["relu"], 2))
    assert g.find_nodes(op="placeholder") == [n["x"]]
    assert g.find_nodes(op="call_function", target=operator.add) == [n["add"], again]
    assert g.find_nodes(op="call_function", target=operator.sub) == []
    assert g.find_nodes(op="call_method", target="relu") == [n["relu"]]
    assert g.find_nodes(op="call_method") == [n["relu"]]
    n["add"].prepend(again) if False else None
    # order follows the graph even after moving nodes
    n["add"].prepend(g.find_nodes(op="call_method", target="relu")[0]) if False else None
    g.erase_node(n["output"])
    g.erase_node(again)
    assert g.find_nodes(op="call_function", target=operator.add) == [n["add"]]
    assert g.find_nodes(op="output") == []


@LIBS
def test_find_nodes_sorted_after_move(lib: ModuleType) -> None:
    g = lib.Graph()
    x = g.placeholder("x")
    a = g.call_function(torch.neg, (x,))
    b = g.call_function(torch.neg, (x,))
    x.append(b)
    assert g.find_nodes(op="call_function", target=torch.neg) == [b, a]


# -- lint --------------------------------------------------------------------------------------


def test_lint_used_before_defined_message_matches() -> None:
    first_lines = []
    for lib in (torch.fx, fxcore):
        g, n = small_graph(lib)
        n["x"].append(n["mul"])  # mul now comes before add, which it uses
        with pytest.raises(RuntimeError) as info:
            g.lint()
        first_lines.append(str(info.value).splitlines()[0])
    assert first_lines[1] == first_lines[0]
    assert "Argument 'add' of Node 'mul' was used before it has been defined" in first_lines[1]


def test_lint_foreign_argument_message_matches() -> None:
    first_lines = []
    for lib in (torch.fx, fxcore):
        g, n = small_graph(lib)
        _, m = small_graph(lib)
        n["mul"].args = (m["add"], n["x"])
        with pytest.raises(RuntimeError) as info:
            g.lint()
        first_lines.append(str(info.value).splitlines()[0])
    assert first_lines[1] == first_lines[0]


def test_lint_missing_attribute_messages_match() -> None:
    messages = []
    for lib in (torch.fx, fxcore):
        root = nn.Module()
        root.sub = nn.Linear(2, 2)
        g = lib.Graph()
        x = g.placeholder("x")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g.get_attr("sub.nothing")
        g.output(x)
        with pytest.raises(RuntimeError) as info:
            lib.GraphModule(root, g) if False else _lint_with_owner(lib, root, g)
        messages.append(str(info.value))
    assert messages[1] == messages[0]


def _lint_with_owner(lib: ModuleType, root: nn.Module, g: Any) -> None:
    gm = lib.GraphModule(root, lib.Graph())
    g.owning_module = gm
    g.lint()


def test_lint_call_module_not_a_module_message_matches() -> None:
    messages = []
    for lib in (torch.fx, fxcore):
        root = nn.Module()
        root.register_buffer("buf", torch.ones(1))
        g = lib.Graph()
        x = g.placeholder("x")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g.call_module("buf", (x,))
        g.output(x)
        gm = lib.GraphModule(root, lib.Graph())
        gm.buf = torch.ones(1)
        g.owning_module = gm
        with pytest.raises(RuntimeError) as info:
            g.lint()
        messages.append(str(info.value))
    assert messages[1] == messages[0]


@LIBS
def test_lint_duplicate_name(lib: ModuleType) -> None:
    g, n = small_graph(lib)
    n["mul"].name = "add"
    with pytest.raises(RuntimeError, match="Node redefined name add!"):
        g.lint()


# -- printing ----------------------------------------------------------------------------------


def test_python_code_matches() -> None:
    srcs = []
    for lib in (torch.fx, fxcore):
        g, _ = small_graph(lib)
        code = g.python_code(root_module="self")
        assert "forward" in code.src
        srcs.append(code.src)
    assert srcs[1] == srcs[0]


def test_python_code_globals_are_usable() -> None:
    g = fxcore.Graph()
    x = g.placeholder("x")
    y = g.call_function(F.relu, (x,))
    z = g.call_function(torch.add, (y, x), {"alpha": 2})
    g.output((z, None))
    code = g.python_code("self")
    namespace = dict(code.globals)
    exec(code.src, namespace)
    out, none = namespace["forward"](None, torch.tensor([-1.0, 2.0]))
    assert none is None
    torch.testing.assert_close(out, torch.tensor([-2.0, 6.0]))


def test_graph_str_matches_with_types_and_defaults() -> None:
    texts = []
    for lib in (torch.fx, fxcore):
        g = lib.Graph()
        x = g.placeholder("x", type_expr=torch.Tensor)
        k = g.placeholder("k", type_expr=int, default_value=3)
        s = g.call_function(torch.sum, (x,), {"dim": k}, type_expr=torch.Tensor)
        g.output((s, [k]), type_expr=tuple)
        texts.append((str(g), g.python_code("self").src))
    assert texts[1] == texts[0]


def test_print_tabular_with_tabulate(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tabulate")
    outputs = []
    for lib in (torch.fx, fxcore):
        g, _ = small_graph(lib)
        g.print_tabular()
        outputs.append(capsys.readouterr().out)
    assert outputs[1] == outputs[0]
    assert "opcode" in outputs[1] and "call_method" in outputs[1]


def test_print_tabular_without_tabulate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_import = builtins.__import__

    def no_tabulate(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "tabulate":
            raise ImportError("No module named 'tabulate'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tabulate)
    monkeypatch.delitem(sys.modules, "tabulate", raising=False)
    # torch.fx gives up and raises; fxcore prints a plain table instead.
    g, _ = small_graph(torch.fx)
    with pytest.raises(ImportError):
        g.print_tabular()
    capsys.readouterr()
    g, _ = small_graph(fxcore)
    g.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split()[:3] == ["placeholder", "x", "x"]
    assert lines[3].split()[:2] == ["call_function", "add"]
    assert len(lines) == 2 + 5


# -- naming ------------------------------------------------------------------------------------


def _naming_graph(lib: ModuleType) -> Any:
    g = lib.Graph()
    inp = g.placeholder("input")
    lst = g.placeholder("list")
    trc = g.placeholder("torch")
    a = g.call_function(operator.add, (inp, lst))
    b = g.call_function(operator.add, (a, trc))
    c = g.call_function(getattr, (b, "shape"))
    d = g.call_function(getattr, (b, "dtype"))
    e = g.call_module("layers.0", (b,))
    f = g.call_module("layers.0", (e,))
    h = g.create_node("call_function", torch.relu, (f,), name="for")
    i = g.create_node("call_function", torch.relu, (h,), name="add_1")
    j = g.create_node("call_function", torch.relu, (i,), name="add")
    k = g.call_method("__add__", (j, 1))
    m = g.get_attr("weight.data")
    o = g.create_node("call_function", torch.relu, (m,), name="1bad-name")
    p = g.create_node("call_function", torch.relu, (o,), name="CamelCase")
    g.output((c, d, k, p))
    return g


def test_naming_matches_torch_fx() -> None:
    ours = _naming_graph(fxcore)
    theirs = _naming_graph(torch.fx)
    assert names(ours) == names(theirs)
    assert ours.python_code("self").src == theirs.python_code("self").src
    assert names(ours)[:6] == ["input_1", "list_1", "torch_1", "add", "add_1", "getattr_1"]
    assert names(ours)[7:12] == ["layers_0", "layers_1", "for_1", "add_2", "add_3"]
    assert names(ours)[13:16] == ["weight_data", "_1bad_name", "CamelCase"]


def test_names_from_tracing_keywords_and_builtins() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, input: torch.Tensor, list: torch.Tensor, torch: Any) -> Any:
            for layer in self.layers:
                input = layer(input)
            return input + list + torch, input.shape, input.dtype

    ours = fxcore.symbolic_trace(M())
    theirs = torch.fx.symbolic_trace(M())
    assert names(ours.graph) == names(theirs.graph)
    assert ours.code == theirs.code
    assert names(ours.graph)[:5] == ["input_1", "list_1", "torch_1", "layers_0", "layers_1"]


# -- GraphModule -------------------------------------------------------------------------------


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        self.unused = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


@LIBS
def test_add_and_delete_submodule(lib: ModuleType) -> None:
    gm = lib.symbolic_trace(Net())
    assert gm.add_submodule("extra.deep.lin", nn.Linear(3, 3)) is True
    assert isinstance(gm.get_submodule("extra.deep.lin"), nn.Linear)
    gm.register_buffer("buf", torch.ones(1))
    assert gm.add_submodule("buf.child", nn.ReLU()) is False
    assert gm.delete_submodule("extra.deep.lin") is True
    assert gm.delete_submodule("extra.deep.lin") is False
    assert gm.delete_submodule("extra.nothing.here") is False
    assert gm.delete_submodule("buf") is False  # not a module
    assert hasattr(gm, "extra")


def test_delete_all_unused_submodules_matches() -> None:
    results = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(Net())
        gm.add_submodule("extra.deep", nn.Linear(3, 3))
        g = gm.graph
        node = next(n for n in g.nodes if n.op == "call_module" and n.target == "b.1")
        with g.inserting_after(node):
            new = g.call_function(torch.relu, (node.args[0],))
        node.replace_all_uses_with(new)
        g.erase_node(node)
        gm.recompile()
        gm.delete_all_unused_submodules()
        results.append(sorted(name for name, _ in gm.named_modules()))
    assert results[1] == results[0]
    assert "unused" not in results[1] and "b.1" not in results[1] and "b.0" in results[1]


def test_delete_all_unused_submodules_keeps_children_of_called() -> None:
    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    class Leafy(fxcore.Tracer):
        def is_leaf_module(self, m: nn.Module, name: str) -> bool:
            return isinstance(m, Holder) or super().is_leaf_module(m, name)

    class Root(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.holder = Holder()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.holder(x)

    root = Root()
    gm = fxcore.GraphModule(root, Leafy().trace(root))
    gm.delete_all_unused_submodules()
    assert isinstance(gm.get_submodule("holder.inner"), nn.Linear)


@LIBS
def test_recompile_after_graph_edits(lib: ModuleType) -> None:
    gm = lib.symbolic_trace(Net())
    x = torch.randn(2, 3)
    before = gm(x)
    out = gm.graph.output_node() if hasattr(gm.graph, "output_node") else None
    out = next(n for n in gm.graph.nodes if n.op == "output")
    with gm.graph.inserting_before(out):
        doubled = gm.graph.call_function(operator.mul, (out.args[0], 2))
    out.args = (doubled,)
    assert "mul" not in gm.code  # not yet
    gm.recompile()
    assert "mul = b_1 * 2" in gm.code
    torch.testing.assert_close(gm(x), before * 2)


def test_recompile_code_matches_after_edits() -> None:
    codes = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(Net())
        g = gm.graph
        a = next(n for n in g.nodes if n.target == "a")
        with g.inserting_after(a):
            sig = g.call_function(torch.sigmoid, (a,))
        with g.inserting_after(sig):
            g.call_function(torch.tanh, (sig,))  # dead
        a.replace_all_uses_with(sig, delete_user_cb=lambda u, keep=sig: u is not keep)
        gm.recompile()
        codes.append(gm.code)
        g.eliminate_dead_code()
        gm.recompile()
        codes.append(gm.code)
    assert codes[2:] == codes[:2]


def test_runtime_error_note_names_generated_line_and_node() -> None:
    class Bad(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 1
            return y @ x  # shapes do not fit for 1-D vs 2-D of wrong size

    gm = fxcore.symbolic_trace(Bad())
    with pytest.raises(RuntimeError) as info:
        gm(torch.randn(2, 3))
    notes = getattr(info.value, "__notes__", [])
    assert len(notes) == 1
    line_no = gm.code.splitlines().index("    matmul = add @ x;  add = x = None") + 1
    assert notes[0] == (
        f"While executing generated line {line_no} (node 'matmul', op call_function): "
        "matmul = add @ x;  add = x = None"
    )
    assert gm.node_of_generated_line(line_no).name == "matmul"
    # a second failure gets its own single note
    with pytest.raises(RuntimeError) as again:
        gm(torch.randn(2, 3))
    assert len(again.value.__notes__) == 1


def test_to_folder_and_import(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    class WithStuff(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("scale", torch.full((3,), 2.0))
            self.w = nn.Parameter(torch.randn(3))
            self.frozen = nn.Parameter(torch.randn(3), requires_grad=False)
            self.register_buffer("scratch", torch.ones(3), persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = F.relu(self.lin(x)) * self.scale + self.w + torch.ones(3)
            return y * self.frozen - self.scratch

    gm = fxcore.symbolic_trace(WithStuff())
    gm.to_folder(tmp_path / "exported_pkg", "Exported")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("exported_pkg")
    exported = module.Exported()
    x = torch.randn(2, 3)
    torch.testing.assert_close(exported(x), gm(x))
    assert set(exported.state_dict()) == set(gm.state_dict())
    assert dict(exported.named_buffers()).keys() == dict(gm.named_buffers()).keys()
    params = dict(exported.named_parameters())
    assert params.keys() == dict(gm.named_parameters()).keys()
    assert params["w"].requires_grad and not params["frozen"].requires_grad


@LIBS
def test_graph_module_from_dict_root(lib: ModuleType) -> None:
    g = lib.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.weight")
    y = g.call_module("act", (x,))
    g.output(g.call_function(operator.mul, (y, w)))
    gm = lib.GraphModule({"sub.weight": torch.full((2,), 3.0), "act": nn.ReLU()}, g)
    torch.testing.assert_close(gm(torch.tensor([-1.0, 1.0])), torch.tensor([0.0, 3.0]))
    with pytest.raises(RuntimeError, match="not provided in ``root``"):
        lib.GraphModule({"act": nn.ReLU()}, g)


def test_print_readable_has_source_comments() -> None:
    gm = fxcore.symbolic_trace(Net())
    text = gm.print_readable(print_output=False)
    assert text.startswith("class Net(torch.nn.Module):")
    assert f"# File: {__file__}" in text


def test_get_attr_and_call_module_checks_match() -> None:
    seen = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(Net())
        gm.plain = torch.ones(1)  # neither a parameter nor a buffer
        with pytest.warns(UserWarning, match="Attempted to insert a get_attr Node"):
            gm.graph.get_attr("nothing")
        with pytest.warns(UserWarning, match="Attempted to insert a get_attr Node"):
            gm.graph.get_attr("plain")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gm.graph.get_attr("no.such.weight")
        texts = [str(w.message) for w in caught]
        assert texts[0] == "Failed to fetch module no.such!"
        assert texts[1].startswith("Attempted to insert a get_attr Node")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            gm.graph.get_attr("a.weight")
            gm.graph.get_attr("b.0")
            gm.graph.call_module("b.1")
        with pytest.raises(AttributeError) as info:
            gm.graph.call_module("nothing")
        seen.append(str(info.value))
    assert seen[1] == seen[0]


# -- Interpreter and Transformer ---------------------------------------------------------------


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("b", torch.ones(3))

    def forward(self, x: torch.Tensor, k: int = 2) -> torch.Tensor:
        return torch.sigmoid(self.lin(x)).neg() * k + self.b


def test_interpreter_runs_graph() -> None:
    gm = fxcore.symbolic_trace(Small())
    x = torch.randn(2, 3)
    torch.testing.assert_close(fxcore.Interpreter(gm).run(x), gm(x))
    torch.testing.assert_close(fxcore.Interpreter(gm).run(x, 5), gm(x, 5))


def test_interpreter_override_matches_torch_fx() -> None:
    def make(lib: ModuleType) -> Any:
        class NegSigmoid(lib.Interpreter):  # type: ignore[misc, name-defined]
            def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
                if target is torch.sigmoid:
                    return torch.neg(*args, **kwargs)
                return super().call_function(target, args, kwargs)

            def call_method(self, target: Any, args: Any, kwargs: Any) -> Any:
                if target == "neg":
                    return torch.sigmoid(*args, **kwargs)
                return super().call_method(target, args, kwargs)

        return NegSigmoid

    x = torch.randn(2, 3)
    results = []
    for lib in (torch.fx, fxcore):
        torch.manual_seed(0)
        gm = lib.symbolic_trace(Small())
        results.append(make(lib)(gm).run(x))
    torch.testing.assert_close(results[1], results[0])


def test_interpreter_error_names_node() -> None:
    gm = fxcore.symbolic_trace(Small())
    with pytest.raises(RuntimeError) as info:
        fxcore.Interpreter(gm).run(torch.randn(2, 4))
    notes = "\n".join(info.value.__notes__)
    assert "While executing %lin : [num_users=1] = call_module[target=lin]" in notes
    assert f"Original source: {__file__}:" in notes


def test_interpreter_initial_env_and_gc() -> None:
    gm = fxcore.symbolic_trace(Small())
    lin = next(n for n in gm.graph.nodes if n.op == "call_module")
    interp = fxcore.Interpreter(gm)
    out = interp.run(torch.zeros(2, 3), initial_env={lin: torch.zeros(2, 3)})
    torch.testing.assert_close(out, torch.full((2, 3), -1.0 + 1.0))
    # lin never ran, so x (used only by lin) was never freed
    assert [n.name for n in interp.env] == ["x", "output"]
    keep = fxcore.Interpreter(gm, garbage_collect_values=False)
    keep.run(torch.zeros(2, 3))
    assert len(keep.env) == len(gm.graph.nodes)


def test_transformer_matches_torch_fx() -> None:
    def make(lib: ModuleType) -> Any:
        class SigmoidToTanh(lib.Transformer):  # type: ignore[misc, name-defined]
            def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
                if target is torch.sigmoid:
                    return super().call_function(torch.tanh, args, kwargs)
                return super().call_function(target, args, kwargs)

        return SigmoidToTanh

    codes, outs = [], []
    x = torch.randn(2, 3)
    for lib in (torch.fx, fxcore):
        torch.manual_seed(0)
        gm = lib.symbolic_trace(Small())
        new = make(lib)(gm).transform()
        assert isinstance(new, lib.GraphModule)
        codes.append(new.code)
        outs.append(new(x))
    assert codes[1] == codes[0]
    assert "torch.tanh" in codes[1]
    torch.testing.assert_close(outs[1], outs[0])


def test_identity_transformer_code_matches() -> None:
    """Both drop placeholder annotations but keep names, defaults and the body."""
    codes = [lib.Transformer(lib.symbolic_trace(Small())).transform().code for lib in LIB_LIST]
    assert codes[1] == codes[0]
    assert "def forward(self, x, k = 2):" in codes[1]


# -- replace_pattern ---------------------------------------------------------------------------


class PatternModel(nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        a = torch.relu(x + w)
        b = torch.relu(a + w)
        c = torch.sigmoid(b) + a
        return c + torch.relu(c + 1)


def _add_relu(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu(x + y)


def _fused(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.clamp(torch.add(x, y), min=0)


def _relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


def _neg_neg(x: torch.Tensor) -> torch.Tensor:
    return torch.neg(torch.neg(x))


def _identity_add(x: torch.Tensor) -> torch.Tensor:
    return x + 0


@pytest.mark.parametrize(
    ("pattern", "replacement"),
    [(_add_relu, _fused), (_relu, _neg_neg), (_relu, _identity_add)],
    ids=["add_relu->fused", "relu->neg_neg", "relu->identity_add"],
)
def test_replace_pattern_matches_torch_fx(pattern: Any, replacement: Any) -> None:
    x, w = torch.randn(3), torch.randn(3)
    results = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(PatternModel())
        expected = gm(x, w)
        matches = lib.replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        results.append((len(matches), gm.code))
        if replacement is _fused:  # the only replacement that keeps the meaning
            torch.testing.assert_close(gm(x, w), expected)
    assert results[1] == results[0]


def test_replace_pattern_with_escaping_intermediate_matches() -> None:
    class Escapes(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            s = x + y
            return torch.relu(s), s  # s escapes: add+relu must not be replaced

    codes = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(Escapes())
        lib.replace_pattern(gm, _add_relu, _fused)
        codes.append(gm.code)
    assert codes[1] == codes[0]


def test_replace_pattern_with_graph_module_pattern() -> None:
    gm = fxcore.symbolic_trace(PatternModel())
    pattern = fxcore.symbolic_trace(_relu)
    replacement = fxcore.symbolic_trace(_identity_add)
    matches = fxcore.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 3
    assert "relu" not in gm.code


# -- ShapeProp ---------------------------------------------------------------------------------


class ShapeModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.conv(x).mean(dim=(2, 3))
        return self.lin(y), y.shape[0]


def _metas(gm: Any) -> dict[str, Any]:
    return {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}


def test_shape_prop_real_tensors_matches_torch_fx() -> None:
    x = torch.randn(2, 3, 8, 8)
    torch.manual_seed(0)
    ours = fxcore.symbolic_trace(ShapeModel())
    torch.manual_seed(0)
    theirs = torch.fx.symbolic_trace(ShapeModel())
    out_ours = ShapeProp(ours).propagate(x)
    out_theirs = torch.fx.passes.shape_prop.ShapeProp(theirs).propagate(x)
    torch.testing.assert_close(out_ours[0], out_theirs[0])
    ours_meta, theirs_meta = _metas(ours), _metas(theirs)
    assert list(ours_meta) == list(theirs_meta)
    assert ours_meta["output"] == theirs_meta["output"]  # (TensorMetadata, 2)
    for name, meta in theirs_meta.items():
        if not isinstance(meta, tuple) or not hasattr(meta, "shape"):
            assert ours_meta[name] == meta, name
            continue
        mine = ours_meta[name]
        assert (mine.shape, mine.dtype, mine.requires_grad, mine.stride) == (
            meta.shape,
            meta.dtype,
            meta.requires_grad,
            meta.stride,
        ), name
        assert mine.memory_format == meta.memory_format, name
    lin = next(n for n in ours.graph.nodes if n.name == "lin")
    assert lin.meta["tensor_meta"].shape == torch.Size([2, 2])
    assert lin.meta["type"] is torch.Tensor
    types = {n.name: n.meta["type"] for n in ours.graph.nodes}
    assert types == {n.name: n.meta["type"] for n in theirs.graph.nodes}
    assert types["getitem"] is int and types["getattr_1"] is torch.Size


def test_shape_prop_meta_tensors() -> None:
    gm = fxcore.symbolic_trace(ShapeModel())
    weight = gm.conv.weight
    out, batch = ShapeProp(gm).propagate(torch.empty(5, 3, 10, 10, device="meta"))
    assert out.is_meta and out.shape == (5, 2)
    assert batch == 5
    assert gm.conv.weight is weight and not weight.is_meta  # the module is untouched
    conv = next(n for n in gm.graph.nodes if n.name == "conv")
    assert conv.meta["tensor_meta"].shape == torch.Size([5, 4, 8, 8])
    assert conv.meta["tensor_meta"].dtype == torch.float32


# -- replace_pattern edge cases, each against torch.fx ------------------------------------------


class _ChainOfRelus(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.relu(torch.relu(torch.relu(x)))) * 2 + x * x


def _relu_relu(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.relu(x))


def _sig(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x)


def _square(x: torch.Tensor) -> torch.Tensor:
    return x * x


def _times_two(x: torch.Tensor) -> torch.Tensor:
    return x * 2


def _times_three(x: torch.Tensor) -> torch.Tensor:
    return x * 3


def _pow2(x: torch.Tensor) -> torch.Tensor:
    return x**2


class _TwoOut(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
        a = x.relu()
        t = a + 1
        b = t.sigmoid()  # b depends on a through t: fusing {a, b} would make a cycle
        c = y.relu()
        d = y.sigmoid()
        return b, c, d


def _relu_and_sigmoid(x: torch.Tensor, y: torch.Tensor) -> Any:
    return x.relu(), y.sigmoid()


def _tanh_pair(x: torch.Tensor, y: torch.Tensor) -> Any:
    return x.tanh(), y.tanh()


class _Aten(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = torch.ops.aten.add.Tensor(x, y, alpha=1)
        return torch.ops.aten.add.Tensor(a, y)


def _aten_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.add.Tensor(x, y)


def _aten_sub(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.sub.Tensor(x, y)


REWRITE_CASES = {
    "overlapping": (_ChainOfRelus, _relu_relu, _sig, 1),
    "repeated_placeholder": (_ChainOfRelus, _square, _pow2, 1),
    "literal_must_match": (_ChainOfRelus, _times_two, _pow2, 1),
    "literal_differs": (_ChainOfRelus, _times_three, _pow2, 1),
    "two_outputs_and_cycle": (_TwoOut, _relu_and_sigmoid, _tanh_pair, 2),
    "aten_defaults": (_Aten, _aten_add, _aten_sub, 2),
}


@pytest.mark.parametrize("case", sorted(REWRITE_CASES))
def test_replace_pattern_edge_cases_match_torch_fx(case: str) -> None:
    model, pattern, replacement, n_inputs = REWRITE_CASES[case]
    results = []
    for lib in (torch.fx, fxcore):
        gm = lib.symbolic_trace(model())
        matches = lib.replace_pattern(gm, pattern, replacement)
        gm.graph.lint()
        anchors = [m.anchor.name for m in matches]  # the pattern's node, in both
        mapped = [sorted(str(v) for v in m.nodes_map.values()) for m in matches]
        results.append((anchors, mapped, gm.code))
        gm(*(torch.randn(3) for _ in range(n_inputs)))
    assert results[1] == results[0]


class _WithWeight(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 3))
        self.scale = nn.Parameter(torch.randn(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight).relu() * self.scale


class _MatmulPattern(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(3, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.w).relu()


class _MatmulReplacement(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(3, 3))
        self.extra = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.extra(x @ self.w)


def test_replace_pattern_with_attributes_matches_torch_fx() -> None:
    results = []
    for lib in (torch.fx, fxcore):
        torch.manual_seed(0)
        gm = lib.symbolic_trace(_WithWeight())
        pattern = lib.symbolic_trace(_MatmulPattern())
        replacement = lib.symbolic_trace(_MatmulReplacement())
        matches = lib.replace_pattern(gm, pattern, replacement)
        results.append((len(matches), gm.code, sorted(dict(gm.named_modules()))))
        assert isinstance(gm.get_submodule("extra"), nn.Linear)
        gm(torch.randn(2, 3))
    assert results[1] == results[0]


def test_find_matches_binds_only_nodes_by_default() -> None:
    from fxcore.subgraph_rewriter import find_matches

    def product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * b

    gm = fxcore.symbolic_trace(_ChainOfRelus())
    pattern = fxcore.symbolic_trace(product).graph
    # ``relu_3 * 2``: b would be the constant 2; ``x * x``: a and b cannot both be x
    assert find_matches(gm.graph, pattern) == []
    (match,) = find_matches(gm.graph, pattern, match_literals=True)
    assert match.anchor is node_named(gm, "mul")  # a graph node, unlike replace_pattern's
    a, b = (n for n in pattern.nodes if n.op == "placeholder")
    assert match.nodes_map[a] is node_named(gm, "relu_3")
    assert match.nodes_map[b] == 2


def node_named(gm: Any, name: str) -> Any:
    return next(n for n in gm.graph.nodes if n.name == name)


# -- autograd view ----------------------------------------------------------------------------


def test_autograd_view_names_backward_nodes_and_parameters() -> None:
    from fxcore.autograd_view import autograd_view

    class TwoLayer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(3, 4)
            self.fc2 = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc2(torch.relu(self.fc1(x))).sum()

    gm = fxcore.symbolic_trace(TwoLayer())
    view = autograd_view(gm, torch.randn(5, 3))
    assert view.backward_of == {
        "fc1": "AddmmBackward0",
        "relu": "ReluBackward0",
        "fc2": "AddmmBackward0",
        "sum_1": "SumBackward0",
        "output": "SumBackward0",
    }
    accumulate = {n.parameter for n in view.nodes if n.name == "AccumulateGrad"}
    assert accumulate == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    ids = {n.id: n for n in view.nodes}
    relu = next(n for n in view.nodes if n.name == "ReluBackward0")
    (edge,) = [e for e in view.edges if e.source == relu.id]
    assert ids[edge.target].name == "AddmmBackward0" and edge.input_nr == 0
    assert all(e.source in ids and e.target in ids for e in view.edges)


def test_interpreter_handles_structured_inputs_like_torch_fx() -> None:
    class Structured(nn.Module):
        def forward(self, x: torch.Tensor, d: dict[str, Any]) -> Any:
            return {"out": x * d["a"] + d["b"][0]}

    x = torch.randn(3)
    d = {"a": torch.randn(3), "b": [torch.randn(3)]}
    results = []
    for lib in (torch.fx, fxcore):
        ph = torch.fx._symbolic_trace.PH if lib is torch.fx else fxcore.PH
        gm = lib.symbolic_trace(Structured(), concrete_args={"d": {"a": ph, "b": [ph]}})
        direct = gm(x, d)
        interpreted = lib.Interpreter(gm).run(x, d)
        torch.testing.assert_close(interpreted, direct)
        flat = lib.Interpreter(gm).run(x, d["a"], d["b"][0], enable_io_processing=False)
        torch.testing.assert_close(flat, [direct["out"]])
        results.append((gm.code, [n.name for n in gm.graph.nodes]))
    assert results[1] == results[0]


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")  # torch saving a TreeSpec
def test_to_folder_with_structured_inputs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    class Structured(nn.Module):
        def forward(self, x: torch.Tensor, d: dict[str, Any]) -> Any:
            return {"out": x * d["a"]}

    gm = fxcore.symbolic_trace(Structured(), concrete_args={"d": {"a": fxcore.PH}})
    gm.to_folder(tmp_path / "structured_pkg", "Exported")
    monkeypatch.syspath_prepend(str(tmp_path))
    exported = importlib.import_module("structured_pkg").Exported()
    x, a = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(exported(x, {"a": a}), {"out": x * a})
