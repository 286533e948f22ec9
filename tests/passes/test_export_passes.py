"""Passes over torch.export's graphs (ATen-level), checked by a real `fxls check` and by
torch itself: a pass the file applies to `ep.graph_module`, to `ep.module()` (PT2E's style)
or to the ExportedProgram, and one it registers with Inductor
(`post_grad_custom_pre_pass`/`post_grad_custom_post_pass`, a function or a
`CustomGraphPass`), each run on the export graph of the file's `Net` and checked as FX
passes are, at the pass line with the same codes. torch, in a plain process, confirms each
bug is one on its own graphs: `graph.lint()` raises, Inductor raises, `eliminate_dead_code()`
finds the node, the returned module runs stale code, or the outputs change."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fxls.analysis.passes import checks
from fxls.analysis.passes.export_graphs import export_model
from fxls.analysis.passes.export_passes import export_uses
from fxls.analysis.passes.parameters import ExportForm, PassKind
from fxls.graph_view.pass_view import short_problem
from fxls.output import pass_nodes
from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.test_passes import check_cases
from tests.torch_answers import torch_answer

HERE = Path(__file__).resolve().parent

HEADER = """import torch
import torch._inductor.config as inductor_config
from torch import nn
from torch._inductor.custom_graph_pass import CustomGraphPass

aten = torch.ops.aten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


"""

RELU_TO_CLAMP = '''def relu_to_clamp(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is aten.relu.default:
            with gm.graph.inserting_after(node):
                clamped = gm.graph.call_function(aten.clamp_min.default, (node.args[0], 0.0))
            node.replace_all_uses_with(clamped)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm
'''

CASES: dict[str, str] = {
    "buggy.py": HEADER + '''def negate_after_relu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is aten.relu.default:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(aten.neg.default, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.recompile()
    return gm


def relu_to_sigmoid(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is aten.relu.default:
            node.target = aten.sigmoid.default
    return gm


def add_abs(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            with gm.graph.inserting_after(node):
                gm.graph.call_function(aten.abs.default, (node,))
    gm.recompile()
    return gm


def relu_to_gelu(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is aten.relu.default:
            node.target = aten.gelu.default
    gm.recompile()
    return gm


def rebuild(ep):
    graph = torch.fx.Graph()
    env = {}
    for node in ep.graph.nodes:
        if node.op == "output":
            graph.output(node.args[0])
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    ep.graph_module.graph = graph
    return ep


def negate_output(ep):
    for node in ep.graph.nodes:
        if node.op == "output":
            with ep.graph.inserting_before(node):
                neg = ep.graph.call_function(aten.neg.default, (node.args[0][0],))
            node.args = ((neg,),)
    return ep


def drop_relu(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.target is aten.relu.default:
            graph.erase_node(node)
            node.replace_all_uses_with(node.args[0])


class ScaleAddmm(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.target is aten.addmm.default:
                with graph.inserting_after(node):
                    graph.call_function(aten.mul.Tensor, (node, 2.0))

    def uuid(self):
        return "scale-addmm"


class TakesAGraphModule(CustomGraphPass):
    def __call__(self, gm: torch.fx.GraphModule) -> None:
        gm.graph.eliminate_dead_code()
        gm.recompile()

    def uuid(self):
        return "takes-a-graph-module"


inductor_config.post_grad_custom_pre_pass = drop_relu
inductor_config.post_grad_custom_post_pass = ScaleAddmm()


def passes_on_exports(x):
    ep = torch.export.export(Net(), (x,))
    negate_after_relu(ep.graph_module)
    relu_to_sigmoid(ep.graph_module)
    rebuild(ep)
    negate_output(ep)
    prepared = ep.module()
    add_abs(prepared)
    relu_to_gelu(prepared)
    with inductor_config.patch(post_grad_custom_post_pass=TakesAGraphModule()):
        return torch.compile(Net())(x)
''',
    "clean.py": HEADER + '''''' + RELU_TO_CLAMP + '''

class FoldDoubleNegation(CustomGraphPass):
    def __call__(self, graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if node.target is aten.neg.default and node.args[0].target is aten.neg.default:
                node.replace_all_uses_with(node.args[0].args[0])
        graph.eliminate_dead_code()

    def uuid(self):
        return "fold-double-negation"


def compiled(model):
    with inductor_config.patch(post_grad_custom_post_pass=FoldDoubleNegation()):
        return torch.compile(model)


def exported(x):
    return relu_to_clamp(torch.export.export(Net(), (x,)).graph_module)
''',
    # a module of passes, with no model: they run on the representative graphs, exported
    "pass_library.py": """import torch
import torch._inductor.config as inductor_config

aten = torch.ops.aten


def fuse_addmm_relu(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.target is aten.relu.default and node.args[0].target is aten.addmm.default:
            graph.erase_node(node.args[0])


inductor_config.post_grad_custom_post_pass = fuse_addmm_relu
""",
    # a script: the model and its ExportedProgram at module level, the pass run at import
    "script.py": """import torch
from torch import nn

aten = torch.ops.aten


def relu_to_sigmoid(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is aten.relu.default:
            node.target = aten.sigmoid.default
    return gm


model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU()).eval()
ep = torch.export.export(model, (torch.randn(2, 8),))
prepared = relu_to_sigmoid(torch.export.export(model, (torch.randn(2, 8),)).module())
""",
}

#: how torch's reference runs each pass: the graph it gets and what it is handed
TORCH_RUNS: dict[str, dict[str, list[str]]] = {
    "buggy.py": {"negate_after_relu": ["graph_module", "module"],
                 "relu_to_sigmoid": ["graph_module", "module"],
                 "add_abs": ["module", "module"], "relu_to_gelu": ["module", "module"],
                 "rebuild": ["program", "program"], "negate_output": ["program", "program"],
                 "drop_relu": ["inductor", "graph"],
                 "ScaleAddmm": ["decomposed", "graph"],
                 "TakesAGraphModule": ["inductor", "graph"]},
    "clean.py": {"relu_to_clamp": ["graph_module", "module"],
                 "FoldDoubleNegation": ["decomposed", "graph"]},
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export_passes")


@pytest.fixture(scope="module")
def results(folder: Path) -> dict[str, dict]:
    # symbolic tracing only: the passes run on export graphs whatever the file targets
    # (importing torch._inductor takes seconds on a busy machine: more than the default time)
    (folder / "pyproject.toml").write_text(
        '[tool.fxls]\ntargets = ["symbolic_trace"]\ntimeout = 120\n', encoding="utf-8")
    return check_cases(folder, CASES)


@pytest.fixture(scope="module")
def torch_says(results: dict[str, dict], folder: Path) -> dict[str, dict]:
    script = HERE / "export_pass_reference.py"
    said = {}
    for name, runs in TORCH_RUNS.items():
        answer = torch_answer([sys.executable, str(script), str(folder / name), json.dumps(runs)],
                              [script, folder / name], cwd=folder, timeout=600)
        said.update(json.loads(answer.strip().splitlines()[-1]))
    return said


def _of(result: dict, name: str) -> list[dict]:
    return [d for d in result["diagnostics"] if d.get("pass") == name]


def _run(result: dict, name: str) -> dict:
    (report,) = [p for p in result["passes"] if p["name"] == name]
    assert report["graphs_from"] == "export"
    (run,) = report["runs"]
    assert run["graph"] == "Net (export)"
    return run


def test_use_before_define_in_a_pass_over_ep_graph_module(results, torch_says):
    text = CASES["buggy.py"]
    assert ranges(results["buggy.py"], "FX005") == [
        lsp_range(text, "gm.graph.call_function(aten.neg.default, (node,))")]
    (item,) = _of(results["buggy.py"], "negate_after_relu")
    assert "in the export graph of `Net`" in item["message"]
    assert "used before it has been defined" in torch_says["negate_after_relu"]["lint"]


def test_erase_with_users_in_a_pass_registered_with_inductor(results, torch_says):
    text = CASES["buggy.py"]
    assert lsp_range(text, "graph.erase_node(node)") in ranges(results["buggy.py"], "FX004")
    assert "still had 1 users" in _of(results["buggy.py"], "drop_relu")[0]["message"]
    # Inductor itself, compiling the model with the pass, stops there
    assert "still had 1 users" in torch_says["drop_relu"]["raised"]


def test_a_pass_registered_with_inductor_is_handed_a_graph(results, torch_says):
    """Inductor calls its hooks with the Graph, whatever the pass's annotation says."""
    text = CASES["buggy.py"]
    (item,) = _of(results["buggy.py"], "TakesAGraphModule")
    assert item["code"] == "FX004"
    line, col, _, _ = lsp_range(text, "gm.graph.eliminate_dead_code()")
    # at the attribute the Graph lacks
    assert (line, col, line, col + len("gm.graph")) in ranges(results["buggy.py"], "FX004")
    assert "AttributeError: 'Graph' object has no attribute 'graph'" in item["message"]
    assert "AttributeError: 'Graph' object has no attribute 'graph'" in torch_says[
        "TakesAGraphModule"]["raised"]


def test_a_dead_node_made_by_a_pass_over_ep_module(results, torch_says):
    text = CASES["buggy.py"]
    assert lsp_range(text, "gm.graph.call_function(aten.abs.default, (node,))") in ranges(
        results["buggy.py"], "FX010")
    assert torch_says["add_abs"]["dead"] and torch_says["add_abs"]["lint"] is None


def test_a_dead_node_made_by_a_custom_graph_pass(results, torch_says):
    """A `CustomGraphPass` instance registered as `post_grad_custom_post_pass` gets the
    graph in core ATen operators, as Inductor's: it finds the `addmm` of the Linear."""
    text = CASES["buggy.py"]
    assert sorted(ranges(results["buggy.py"], "FX010")) == sorted([
        lsp_range(text, "gm.graph.call_function(aten.abs.default, (node,))"),
        lsp_range(text, "graph.call_function(aten.mul.Tensor, (node, 2.0))")])
    assert _run(results["buggy.py"], "ScaleAddmm")["added"] == 1
    assert torch_says["ScaleAddmm"]["dead"]


def test_no_recompile_at_the_return(results, torch_says):
    text = CASES["buggy.py"]
    assert ranges(results["buggy.py"], "FX007") == [
        lsp_range(text, "return gm", occurrence=1)]
    assert [d["code"] for d in _of(results["buggy.py"], "relu_to_sigmoid")] == ["FX007"]
    assert torch_says["relu_to_sigmoid"]["stale"]


def test_a_foreign_node_in_a_pass_over_the_exported_program(results, torch_says):
    text = CASES["buggy.py"]
    assert ranges(results["buggy.py"], "FX006") == [lsp_range(text, "graph.output(node.args[0])")]
    (report,) = [p for p in results["buggy.py"]["passes"] if p["name"] == "rebuild"]
    assert report["kind"] == "exported_program"
    assert "does not belong to this Graph" in torch_says["rebuild"]["lint"]


def test_a_pass_that_changes_the_outputs(results, torch_says):
    text = CASES["buggy.py"]
    assert ranges(results["buggy.py"], "FX017") == [
        lsp_range(text, "relu_to_gelu"), lsp_range(text, "negate_output")]
    # the ExportedProgram it returns runs its graph (`ep.module()` makes the code afresh)
    assert torch_says["negate_output"]["outputs_differ"]
    (item,) = _of(results["buggy.py"], "relu_to_gelu")
    assert "changes the outputs of the export graph of `Net`" in item["message"]
    assert torch_says["relu_to_gelu"]["outputs_differ"]


def test_correct_passes_report_nothing(results, torch_says):
    assert results["clean.py"]["diagnostics"] == []
    assert _run(results["clean.py"], "relu_to_clamp") == {
        "graph": "Net (export)", "added": 1, "removed": 1, "rewired": 1, "problem": None}
    assert _run(results["clean.py"], "FoldDoubleNegation")["problem"] is None
    for name in TORCH_RUNS["clean.py"]:
        assert torch_says[name] == {"raised": None, "lint": None, "dead": False,
                                    "stale": False, "outputs_differ": False}


def test_each_bug_is_one_pass_s_own(results):
    """Every diagnostic is one of a pass run on the export graph, none on fxcore's."""
    found = {(d["pass"], d["code"]) for d in results["buggy.py"]["diagnostics"]}
    assert found == {("negate_after_relu", "FX005"), ("drop_relu", "FX004"),
                     ("TakesAGraphModule", "FX004"),
                     ("add_abs", "FX010"), ("ScaleAddmm", "FX010"),
                     ("relu_to_sigmoid", "FX007"), ("rebuild", "FX006"),
                     ("negate_output", "FX017"),
                     ("relu_to_gelu", "FX017")}


def test_the_before_and_after_view_of_an_export_graph(tmp_path):
    """`fxls graph FILE::pass` (on a file of that pass alone: the view analyses the file).
    The file targets export (it calls it): the graph before the pass is the export tier's,
    each node with its submodule and the model's expression that made it."""
    text = """import torch
from torch import nn

aten = torch.ops.aten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


""" + RELU_TO_CLAMP + """

def exported(x):
    return relu_to_clamp(torch.export.export(Net(), (x,)).graph_module)
"""
    (tmp_path / "view.py").write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", "view.py::relu_to_clamp",
                           "--format", "json"], capture_output=True, text=True, timeout=240,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["graphs_from"] == "export"
    (run,) = document["runs"]
    assert run["graph"] == "Net (export)"
    assert "relu = torch.ops.aten.relu.default(linear)" in run["before"]
    assert "torch.ops.aten.clamp_min.default(linear, 0.0)" in run["after"]
    nodes = {n["name"]: n for n in run["nodes"]}
    (added,) = [nodes[name] for name in run["added"]]
    assert added["target"] == "aten.clamp_min.default" and added["mark"] == "+"
    start = lsp_range(text, "gm.graph.call_function(aten.clamp_min.default")[0]
    assert added["span"]["line"] == start + 1
    linear, relu = nodes["linear"], nodes["relu"]
    assert (linear["target"], linear["module_path"]) == ("aten.linear.default", "lin")
    assert (relu["mark"], relu["target"]) == ("-", "aten.relu.default")
    for node, expression in ((linear, "self.lin(x)"), (relu, "torch.relu(self.lin(x))")):
        line, col, end_line, end_col = lsp_range(text, expression)
        assert node["span"] == {"file": str(tmp_path / "view.py"), "line": line + 1,
                                "end_line": end_line + 1, "col": col, "end_col": end_col}


def test_a_module_of_passes_runs_them_on_the_representative_graphs_exported(results):
    """What a pass raises on a stand-in graph is information, as for FX passes."""
    text = CASES["pass_library.py"]
    assert ranges(results["pass_library.py"], "FX004") == [
        lsp_range(text, "graph.erase_node(node.args[0])")]
    (item,) = results["pass_library.py"]["diagnostics"]
    assert item["severity"] == "information"
    assert "on the export graph of `MLP (representative)`" in item["message"]
    (report,) = results["pass_library.py"]["passes"]
    assert report["graphs_from"] == "representative"
    assert [run["graph"] for run in report["runs"]] == [
        f"{name} (representative) (export)"
        for name in ("MLP", "ConvBnReLU", "AttentionBlock", "ResidualBlock")]


def test_a_script_s_own_exported_program_and_its_export_at_import(results):
    """The pass runs on the ExportedProgram the file keeps; the nodes torch.export and
    `ep.module()` make while the file is imported are torch's, not a pass's (no FX010 for
    the unlifted BatchNorm's `num_batches_tracked`)."""
    text = CASES["script.py"]
    assert sorted(ranges(results["script.py"], "FX007")) == [
        lsp_range(text, "node.target = aten.sigmoid.default"), lsp_range(text, "return gm")]
    assert [d["code"] for d in results["script.py"]["diagnostics"]] == ["FX007", "FX007"]
    (report,) = results["script.py"]["passes"]
    assert [run["graph"] for run in report["runs"]] == ["ep (export)"]


def test_the_lens_and_statistics_drop_the_graph_the_problem_names(results):
    """A lens and `--statistics` name the graph already: `(in the export graph of ...)` is
    cut from the problem they show, as `(in the graph of ...)` is."""
    (item,) = _of(results["buggy.py"], "add_abs")
    assert short_problem(item["message"]) == "the pass adds `abs_default` but nothing uses it"


def test_the_views_know_the_export_label_the_analysis_gives():
    """The views (no torch on their side) spell the suffix themselves."""
    assert pass_nodes.EXPORT_SUFFIX == checks.EXPORT_SUFFIX


def test_a_model_that_does_not_export_is_a_run_with_the_reason():
    class DataDependent(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else -x

    why = export_model("DataDependent", DataDependent(), (torch.ones(2, 8),), {})
    assert isinstance(why, str) and why.startswith("not run: `DataDependent` does not export (")


def _uses(source: str) -> dict[str, tuple[ExportForm, PassKind]]:
    return {name: (use.form, use.takes) for name, use in export_uses(ast.parse(source)).items()}


def test_how_a_file_hands_a_pass_an_export_graph():
    source = """
ep = torch.export.export(model, args)
gm = ep.graph_module
compiled = torch.compile(model, options={"post_grad_custom_post_pass": fuse})
with torch._inductor.config.patch(post_grad_custom_pre_pass=Cleanup()):
    pass
options["post_grad_custom_pre_pass"] = manager
on_graph_module(gm)
on_graph(ep.graph_module.graph)
on_program(torch.export.export(model, args).run_decompositions())
on_unlifted(ep.module())
onnx_only(torch.onnx.export(model, args))
"""
    assert _uses(source) == {
        "fuse": (ExportForm.DECOMPOSED, PassKind.GRAPH),
        "Cleanup": (ExportForm.DECOMPOSED, PassKind.GRAPH),
        "manager": (ExportForm.DECOMPOSED, PassKind.GRAPH),
        "on_graph_module": (ExportForm.GRAPH_MODULE, PassKind.GRAPH_MODULE),
        "on_graph": (ExportForm.GRAPH_MODULE, PassKind.GRAPH),
        "on_program": (ExportForm.PROGRAM, PassKind.EXPORTED_PROGRAM),
        "on_unlifted": (ExportForm.MODULE, PassKind.GRAPH_MODULE),
    }
