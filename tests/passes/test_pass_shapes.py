"""Pass shapes as they are written in the wild, each run and checked by a real `fxls check`:
class-based passes chained by `compose` (Hugging Face optimum's API), passes taking more
than a graph (feature-extraction surgery, a configuration argument), and a file with no
model that transforms a traced function at import (pytorch/examples' `fx/invert.py`).
Each with one bug put in, reported at its line with its code; the correct twin silent.
"""

from __future__ import annotations

import pytest

from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.samples import NET_HEADER
from tests.passes.test_passes import check_cases

# optimum's fx/optimization/transformations.py, its shape written again: an abstract
# Transformation whose __call__ runs `transform` then lints and recompiles, and `compose`
# chaining instances into an object of a class made inside the function
OPTIMUM_STYLE = NET_HEADER + '''import functools
from abc import ABC, abstractmethod

import torch.nn.functional as F


class Transformation(ABC):
    preserves_computation = False

    @abstractmethod
    def transform(self, graph_module: fx.GraphModule) -> fx.GraphModule:
        raise NotImplementedError

    def __call__(self, graph_module: fx.GraphModule,
                 lint_and_recompile: bool = True) -> fx.GraphModule:
        graph_module = self.transform(graph_module)
        if lint_and_recompile:
            graph_module.graph.lint()
            graph_module.recompile()
        return graph_module


def compose(*transformations: Transformation) -> Transformation:
    def reduce_fn(f, g):
        def composition(graph_module, lint_and_recompile=False):
            return f(g(graph_module, lint_and_recompile=lint_and_recompile))

        return composition

    class ComposeTransformation(Transformation):
        _composition = functools.reduce(reduce_fn, list(reversed(transformations)))

        def transform(self, graph_module):
            return ComposeTransformation._composition(graph_module)

    return ComposeTransformation()


class Identity(Transformation):
    preserves_computation = True

    def transform(self, graph_module):
        return graph_module


class ReluToFunctional(Transformation):
    preserves_computation = True

    def transform(self, graph_module):
        graph = graph_module.graph
        for node in graph.nodes:
            if node.op == "call_function" and node.target is torch.relu:
                with graph.inserting_after(node):
                    new = graph.call_function(F.relu, node.args)
                node.replace_all_uses_with(new)
                graph.erase_node(node)
        return graph_module


pipeline = compose(Identity(), ReluToFunctional())
'''

OPTIMUM_STYLE_BUG = OPTIMUM_STYLE.replace("graph.inserting_after(node)",
                                          "graph.inserting_before(node.args[0])")

# a pass object only reachable through the chain: its class is made inside a function
CHAIN_ONLY = OPTIMUM_STYLE_BUG.replace(
    "class ReluToFunctional(Transformation):", "def make_relu_to_functional():\n"
    "  class ReluToFunctional(Transformation):").replace(
    "pipeline = compose(Identity(), ReluToFunctional())",
    "  return ReluToFunctional()\n\n\npipeline = compose(Identity(), make_relu_to_functional())")

MULTI_ARGUMENT = NET_HEADER + '''from dataclasses import dataclass


def extract_features(model: nn.Module, return_nodes: dict[str, str]) -> fx.GraphModule:
    traced = fx.symbolic_trace(model)
    nodes = {node.name: node for node in traced.graph.nodes}
    nodes["output"].args = ({new: nodes[old] for old, new in return_nodes.items()},)
    traced.graph.eliminate_dead_code()
    traced.recompile()
    return traced


@dataclass
class ClampConfig:
    low: float = 0.0
    high: float = 6.0


def clamp_outputs(gm: fx.GraphModule, config: ClampConfig) -> fx.GraphModule:
    output = next(node for node in gm.graph.nodes if node.op == "output")
    with gm.graph.inserting_before(output):
        clamped = gm.graph.call_function(
            torch.clamp, (output.args[0],), {"min": config.low, "max": config.high})
    output.args = (clamped,)
    gm.recompile()
    return gm


def keep_only(gm: fx.GraphModule, wanted) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.name not in wanted:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


if __name__ == "__main__":
    print(extract_features(Net(), {"lin": "hidden"}).code)
'''

MULTI_ARGUMENT_BUG = MULTI_ARGUMENT.replace(
    "    traced.graph.eliminate_dead_code()\n    traced.recompile()\n",
    "    traced.graph.eliminate_dead_code()\n").replace(
    "    output.args = (clamped,)\n", "")

# pytorch/examples fx/invert.py, as published (no nn.Module; the pass runs at import)
INVERT = '''import torch
import torch.fx as fx

invert_mapping = {}


def add_inverse(a, b):
    invert_mapping[a] = b
    invert_mapping[b] = a


inverses = [
    (torch.sin, torch.arcsin),
    (torch.cos, torch.arccos),
    (torch.tan, torch.arctan),
    (torch.exp, torch.log),
]
for a, b in inverses:
    add_inverse(a, b)


def invert(model: torch.nn.Module) -> torch.nn.Module:
    fx_model = fx.symbolic_trace(model)
    new_graph = fx.Graph()
    env = {}
    for node in reversed(fx_model.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(invert_mapping[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            new_node = new_graph.placeholder(node.name)
            env[node.args[0].name] = new_node
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
        else:
            raise RuntimeError("Not implemented")

    new_graph.lint()
    return fx.GraphModule(fx_model, new_graph)


def f(x):
    return torch.exp(torch.tan(x))


res = invert(f)
print(res.code)
print(f(res((torch.arange(5) + 1))))
'''

INVERT_BUG = INVERT.replace(
    "            env[node.args[0].name] = new_node\n        elif node.op == \"output\":",
    "            new_graph.call_function(torch.neg, (new_node,))\n"
    "            env[node.args[0].name] = new_node\n        elif node.op == \"output\":")

# passes and no graph at all: the stand-in graphs, where a refusal is no error
ONLY_A_PICKY_PASS = '''import torch
import torch.fx as fx


def functions_only(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_module":
            raise RuntimeError("only functions are supported")
    return gm
'''

# class passes configured by their constructor: from the file's own call of the class, or
# nothing to go by
CONFIGURED_CLASS = NET_HEADER + '''class ClampOutputs:
    def __init__(self, limit: float, inclusive):
        self.limit = limit

    def __call__(self, gm: fx.GraphModule) -> fx.GraphModule:
        output = next(node for node in gm.graph.nodes if node.op == "output")
        with gm.graph.inserting_before(output):
            clamped = gm.graph.call_function(torch.clamp, (output.args[0],),
                                             {"max": self.limit})
        output.args = (clamped,)
        gm.recompile()
        return gm


class ScaleOutputs:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, gm: fx.GraphModule) -> fx.GraphModule:
        output = next(node for node in gm.graph.nodes if node.op == "output")
        with gm.graph.inserting_before(output):
            gm.graph.call_function(torch.mul, (output.args[0], self.factor))
        gm.recompile()
        return gm


if __name__ == "__main__":
    ClampOutputs(6.0, inclusive=True)(fx.symbolic_trace(Net()))
'''

# no nn.Module: a function traced at module level, then rewritten in place by the file's pass
TRACED_THEN_REWRITTEN = '''import torch
import torch.fx as fx


def f(x):
    return torch.neg(torch.relu(x))


def relu_to_sigmoid(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_module":
            raise RuntimeError("only functions are supported")
        if node.target is torch.relu:
            node.target = torch.sigmoid
    gm.recompile()
    return gm


traced = fx.symbolic_trace(f)
relu_to_sigmoid(traced)
'''

# a model whose inputs fxls cannot infer: the Interpreter has nothing to run the file's graph on
INTERPRETER_WITHOUT_INPUTS = '''import torch
import torch.fx as fx
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


class CountCalls(fx.Interpreter):
    def call_function(self, target, args, kwargs):
        return super().call_function(target, args, kwargs)


def relu_to_sigmoid(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            node.target = torch.sigmoid
    gm.recompile()
    return gm
'''

FILES = {
    "optimum_style.py": OPTIMUM_STYLE,
    "optimum_style_bug.py": OPTIMUM_STYLE_BUG,
    "chain_only.py": CHAIN_ONLY,
    "multi_argument.py": MULTI_ARGUMENT,
    "multi_argument_bug.py": MULTI_ARGUMENT_BUG,
    "invert.py": INVERT,
    "invert_bug.py": INVERT_BUG,
    "only_a_picky_pass.py": ONLY_A_PICKY_PASS,
    "interpreter_without_inputs.py": INTERPRETER_WITHOUT_INPUTS,
    "traced_then_rewritten.py": TRACED_THEN_REWRITTEN,
    "configured_class.py": CONFIGURED_CLASS,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return check_cases(tmp_path_factory.mktemp("pass_shapes"), FILES, timeout=30)


def _problems(found: dict) -> list[dict]:
    return [d for d in found["diagnostics"] if d["severity"] in ("error", "warning")]


def _passes(found: dict) -> dict[str, dict]:
    return {p["name"]: p for p in found.get("passes", [])}


def test_a_class_based_pass_and_its_compose_chain_run_silently_when_right(results):
    found = results["optimum_style.py"]
    assert found["diagnostics"] == []
    passes = _passes(found)
    assert passes["ReluToFunctional"]["kind"] == "class"
    assert passes["pipeline"]["kind"] == "instance"
    for name in ("ReluToFunctional", "pipeline"):
        (run,) = passes[name]["runs"]
        assert run["graph"] == "Net" and run["problem"] is None, run
    # the abstract base and the class made inside compose are no passes of their own
    assert "Transformation" not in passes and "Identity" in passes


def test_a_class_based_pass_bug_at_its_line_in_the_method(results):
    text = OPTIMUM_STYLE_BUG
    found = results["optimum_style_bug.py"]
    assert ranges(found, "FX005") == [lsp_range(text, "graph.call_function(F.relu, node.args)")]
    assert [d["code"] for d in _problems(found)] == ["FX005"]


def test_a_pass_object_reachable_only_through_the_chain_runs(results):
    text = CHAIN_ONLY
    found = results["chain_only.py"]
    assert ranges(found, "FX005") == [lsp_range(text, "graph.call_function(F.relu, node.args)")]
    assert _passes(found)["pipeline"]["kind"] == "instance"


def test_multi_argument_passes_run_with_the_files_call_and_annotations(results):
    found = results["multi_argument.py"]
    assert _problems(found) == []
    passes = _passes(found)
    (run,) = passes["extract_features"]["runs"]  # return_nodes from the file's own call
    assert run["problem"] is None and run["graph"] == "Net"
    (run,) = passes["clamp_outputs"]["runs"]  # config=ClampConfig() from its annotation
    assert run["problem"] is None
    (run,) = passes["keep_only"]["runs"]  # `wanted`: nothing to go by
    assert run["problem"].startswith("not run: it wants options besides the graph (`wanted`")


def test_multi_argument_pass_bugs_at_their_lines(results):
    text = MULTI_ARGUMENT_BUG
    found = results["multi_argument_bug.py"]
    assert ranges(found, "FX007") == [lsp_range(text, "return traced")]
    assert ranges(found, "FX010") == [lsp_range(text, "gm.graph.call_function(",
                                                end_needle="config.high})")]
    assert sorted(d["code"] for d in _problems(found)) == ["FX007", "FX010"]


def test_a_traced_function_transformed_at_import_is_the_graph_its_pass_runs_on(results):
    """pytorch/examples' invert: no FX004 from fxls's stand-in graphs, which it refuses by
    design; it runs on `f`, the function the file hands it."""
    found = results["invert.py"]
    assert found["diagnostics"] == []
    (run,) = _passes(found)["invert"]["runs"]
    assert run["graph"] == "f" and run["problem"] is None
    assert _passes(found)["invert"]["graphs_from"] == "models"


def test_a_bug_in_a_pass_run_on_a_traced_function(results):
    text = INVERT_BUG
    found = results["invert_bug.py"]
    assert ranges(found, "FX010") == [lsp_range(text, "new_graph.call_function(torch.neg, "
                                                "(new_node,))")]
    assert [d["code"] for d in _problems(found)] == ["FX010"]


def test_a_pass_that_raises_only_on_stand_in_graphs_is_information(results):
    found = results["only_a_picky_pass.py"]
    assert _problems(found) == []
    raised = [d for d in found["diagnostics"] if d["code"] == "FX004"]
    assert raised and all(d["severity"] == "information" for d in raised)
    assert all("(representative)" in d["message"] for d in raised)


def test_stand_ins_only_for_a_pass_the_files_graphs_give_no_run(results):
    passes = _passes(results["interpreter_without_inputs.py"])
    assert passes["relu_to_sigmoid"]["graphs_from"] == "models"
    assert [r["graph"] for r in passes["relu_to_sigmoid"]["runs"]] == ["Net"]
    assert passes["CountCalls"]["graphs_from"] == "representative"
    assert all(r["graph"].endswith("(representative)") and r["problem"] is None
               for r in passes["CountCalls"]["runs"])


def test_a_traced_function_rewritten_at_import_is_run_on_as_traced(results):
    """`traced` was changed by the pass at import: its passes run on it as
    `fx.symbolic_trace(f)` made it, not on the stand-ins (which have module calls)."""
    found = results["traced_then_rewritten.py"]
    assert found["diagnostics"] == []
    (run,) = _passes(found)["relu_to_sigmoid"]["runs"]
    assert run["graph"] == "traced" and run["problem"] is None and run["removed"] == 1


def test_a_class_pass_configured_by_its_constructor(results):
    """`ClampOutputs(6.0, inclusive=True)` as the file builds it; `ScaleOutputs(factor)` has
    no value fxls can find: listed, not run (its unused node would otherwise be FX010)."""
    found = results["configured_class.py"]
    assert _problems(found) == []
    passes = _passes(found)
    (run,) = passes["ClampOutputs"]["runs"]
    assert run["problem"] is None and run["added"] == 1, run
    (run,) = passes["ScaleOutputs"]["runs"]
    assert run["problem"].startswith("not run: it wants options besides the graph (`factor`")
