"""FX passes, written against torch.fx as people write them, checked by a real `fxls check`.

Every pass shape (a function over a GraphModule or a Graph, a module-to-module fuser that
traces inside, an fx.Transformer, a PassBase, a PassManager, replace_pattern, a pass the
file runs at import) and every pass diagnostic, with its exact range: the pass line that
created, rewired, moved or erased the node, or that raised.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.samples import NET_HEADER

HEADER = NET_HEADER

CASES: dict[str, str] = {
    "use_before_define.py": HEADER + '''def negate_after_relu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.recompile()
    return gm
''',
    "at_import.py": HEADER + '''def negate_after_relu(gm):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)


traced = fx.symbolic_trace(Net())
negate_after_relu(traced)
''',
    "lint_in_pass.py": HEADER + '''def negate_and_lint(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.graph.lint()
    gm.recompile()
    return gm


model = Net()
''',
    "erase_with_users.py": HEADER + '''def drop_relu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            gm.graph.erase_node(node)
            node.replace_all_uses_with(node.args[0])
    gm.recompile()
    return gm
''',
    "no_recompile.py": HEADER + '''def relu_to_sigmoid(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            node.target = torch.sigmoid
    return gm
''',
    "stale_call.py": HEADER + '''def sigmoid_and_check(gm: fx.GraphModule) -> None:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            node.target = torch.sigmoid
    out = gm(torch.randn(2, 8))
    assert out.shape == (2, 8)
''',
    "foreign_node.py": HEADER + '''def rebuild(gm: fx.GraphModule) -> fx.GraphModule:
    graph = fx.Graph()
    env = {}
    for node in gm.graph.nodes:
        if node.op == "output":
            graph.output(node.args[0])
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    return fx.GraphModule(gm, graph)
''',
    "unused_node.py": HEADER + '''def add_abs(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            with gm.graph.inserting_after(node):
                gm.graph.call_function(torch.abs, (node,))
    gm.recompile()
    return gm
''',
    "graph_pass.py": HEADER + '''def clamp_output(graph: fx.Graph) -> None:
    for node in graph.nodes:
        if node.op == "output":
            with graph.inserting_before(node):
                clamped = graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})
            node.args = (clamped,)


def make_neg(graph, node):
    return graph.call_function(torch.neg, (node,))


def feed_back(graph: fx.Graph) -> None:
    nodes = list(graph.nodes)
    first_call, last_call = nodes[1], nodes[-2]
    first_call.args = (last_call, *first_call.args[1:])
''',
    "missing_target.py": HEADER + '''def retarget(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_module":
            node.target = "lin_fused"
    gm.recompile()
    return gm
''',
    "shapes.py": HEADER + '''from torch.fx import subgraph_rewriter
from torch.fx.passes.infra.pass_base import PassBase, PassResult
from torch.fx.passes.infra.pass_manager import PassManager


class ReluToGelu(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target is torch.relu:
            target = torch.nn.functional.gelu
        return super().call_function(target, args, kwargs)


class DropRelu(PassBase):
    def call(self, gm):
        for node in gm.graph.nodes:
            if node.target is torch.relu:
                gm.graph.erase_node(node)
        return PassResult(gm, True)


def pattern(x):
    return torch.relu(x)


def replacement(x):
    return torch.relu(x) * 1.0


def rewrite(gm: fx.GraphModule) -> fx.GraphModule:
    subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    return gm


def fuse(model: nn.Module) -> nn.Module:
    traced = fx.symbolic_trace(model)
    for node in traced.graph.nodes:
        if node.target is torch.relu:
            with traced.graph.inserting_before(node):
                doubled = traced.graph.call_function(torch.mul, (node, 2.0))
    traced.recompile()
    return traced


manager = PassManager(passes=[DropRelu()])
''',
    "clean.py": HEADER + '''def relu_to_relu6(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(torch.nn.functional.relu6, node.args)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


class Identity(fx.Transformer):
    pass


def extract(model: nn.Module, return_nodes=None) -> fx.GraphModule:
    if return_nodes is None:
        raise ValueError("`return_nodes` must be given")
    return fx.symbolic_trace(model)
''',
}

ONLY_PASSES = '''import torch
import torch.fx as fx


def insert_clamp(graph: fx.Graph) -> None:
    for node in graph.nodes:
        if node.op == "output":
            with graph.inserting_before(node):
                graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})
'''


def _check(folder: Path, *paths: Path) -> dict[str, dict]:
    fxls = [sys.executable, "-m", "fxls", "check", "--format", "json", *map(str, paths)]
    done = subprocess.run(fxls, capture_output=True, text=True, timeout=600, cwd=folder)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}


def check_cases(folder: Path, files: dict[str, str], timeout: int | None = None
                ) -> dict[str, dict]:
    """Each of ``files`` written into ``folder`` (with ``timeout`` as the project's
    setting), all checked by one ``fxls check``: each file's result by its name."""
    if timeout is not None:
        (folder / "pyproject.toml").write_text(f"[tool.fxls]\ntimeout = {timeout}\n",
                                               encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return _check(folder, folder)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return check_cases(tmp_path_factory.mktemp("passes"), CASES, timeout=20)


def codes(file_result: dict) -> list[str]:
    return sorted(d["code"] for d in file_result["diagnostics"])


def _analyze_in_child(path: Path, text: str, result: str) -> object:
    """``result`` (an expression of ``report``) for ``text`` analysed as ``path``, in a child
    process: the analysis executes the file."""
    script = (
        "import json\n"
        "from fxls.analysis.pipeline import analyze_source\n"
        "from fxls.project.setting_groups import ProjectLayout\n"
        "from fxls.project.settings import Settings\n"
        f"report = analyze_source({str(path)!r}, {text!r}, "
        f"Settings(project=ProjectLayout(root={str(path.parent)!r})))\n"
        f"print(json.dumps({result}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=path.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fx005_at_the_creation_under_inserting_before(results):
    text = CASES["use_before_define.py"]
    assert ranges(results["use_before_define.py"], "FX005") == [
        lsp_range(text, "gm.graph.call_function(torch.neg, (node,))")]
    (item,) = results["use_before_define.py"]["diagnostics"]
    assert item["module"] == "negate_after_relu"
    assert "`neg` uses `relu`" in item["message"] and "`Net`" in item["message"]


def test_a_pass_run_at_import_on_a_torch_fx_trace(results):
    text = CASES["at_import.py"]
    assert ranges(results["at_import.py"], "FX005") == [
        lsp_range(text, "gm.graph.call_function(torch.neg, (node,))")]


def test_a_pass_that_lints_itself_gets_the_cause_not_the_lint_call(results):
    """Its own `graph.lint()` raises: FX005 at the node's creation, the lint() related."""
    text = CASES["lint_in_pass.py"]
    assert ranges(results["lint_in_pass.py"], "FX005") == [
        lsp_range(text, "gm.graph.call_function(torch.neg, (node,))")]
    assert codes(results["lint_in_pass.py"]) == ["FX005"]


def test_fx004_at_the_erase_node_line(results):
    text = CASES["erase_with_users.py"]
    assert ranges(results["erase_with_users.py"], "FX004") == [
        lsp_range(text, "gm.graph.erase_node(node)")]
    assert "still had 1 users" in results["erase_with_users.py"]["diagnostics"][0]["message"]


def test_fx007_at_the_return_of_a_stale_graph_module(results):
    text = CASES["no_recompile.py"]
    assert ranges(results["no_recompile.py"], "FX007") == [lsp_range(text, "return gm")]
    assert codes(results["no_recompile.py"]) == ["FX007"]


def test_fx007_at_a_call_of_a_stale_graph_module(results):
    text = CASES["stale_call.py"]
    assert ranges(results["stale_call.py"], "FX007") == [lsp_range(text, "gm(torch.randn(2, 8))")]
    (item,) = results["stale_call.py"]["diagnostics"]
    assert item["module"] == "sigmoid_and_check"


def test_fx006_a_node_of_the_old_graph_handed_to_the_new_output(results):
    text = CASES["foreign_node.py"]
    assert ranges(results["foreign_node.py"], "FX006") == [
        lsp_range(text, "graph.output(node.args[0])")]


def test_fx010_a_node_the_pass_added_that_nothing_uses(results):
    text = CASES["unused_node.py"]
    assert ranges(results["unused_node.py"], "FX010") == [
        lsp_range(text, "gm.graph.call_function(torch.abs, (node,))")]
    assert codes(results["unused_node.py"]) == ["FX010"]


def test_a_graph_pass_that_rewires_to_a_later_node(results):
    """``clamp_output`` is right (the output is rewired to a node before it); ``feed_back``
    rewires the first call to the last one: FX005 at that assignment."""
    text = CASES["graph_pass.py"]
    assert ranges(results["graph_pass.py"], "FX005") == [
        lsp_range(text, "first_call.args = (last_call, *first_call.args[1:])")]
    assert codes(results["graph_pass.py"]) == ["FX005"]


def test_fx006_a_target_the_module_does_not_have_at_the_retargeting_line(results):
    text = CASES["missing_target.py"]
    assert ranges(results["missing_target.py"], "FX006") == [
        lsp_range(text, 'node.target = "lin_fused"')]


def test_transformer_pass_base_manager_replace_pattern_and_fuser(results):
    text = CASES["shapes.py"]
    found = results["shapes.py"]
    # PassBase and the PassManager that runs it: the erase line, once
    assert ranges(found, "FX004") == [lsp_range(text, "gm.graph.erase_node(node)")]
    # the Transformer changes the outputs (relu -> gelu), the exact rewrite does not
    assert ranges(found, "FX017") == [lsp_range(text, "ReluToGelu")]
    # the module-to-module fuser: its unused node, at its line
    assert ranges(found, "FX010") == [
        lsp_range(text, "traced.graph.call_function(torch.mul, (node, 2.0))")]


def test_a_clean_pass_and_an_identity_transformer_report_nothing(results):
    """Nor a pass that refuses to run without its options (as torchvision's
    create_feature_extractor does without `return_nodes`): fxls called it, not the user."""
    assert results["clean.py"]["diagnostics"] == []


def test_a_file_of_passes_runs_them_on_representative_graphs(tmp_path):
    path = tmp_path / "only_passes.py"
    path.write_text(ONLY_PASSES, encoding="utf-8")
    found = _check(tmp_path, path)["only_passes.py"]
    assert ranges(found, "FX010") == [
        lsp_range(ONLY_PASSES, "graph.call_function(torch.clamp, (node.args[0],), {\"min\": 0.0})")]
    assert "(representative)" in found["diagnostics"][0]["message"]


def test_a_file_of_passes_runs_them_on_the_projects_pass_models(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "models.py").write_text(HEADER + "def build():\n    return Net()\n",
                                       encoding="utf-8")
    (package / "passes.py").write_text(ONLY_PASSES, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fxls]\npass_models = ["pkg.models:build()"]\n', encoding="utf-8")
    found = _check(tmp_path, package / "passes.py")["passes.py"]
    (item,) = found["diagnostics"]
    assert item["code"] == "FX010" and "graph of `build()`" in item["message"]


def test_passes_in_the_report(tmp_path):
    """The report lists each pass and what it did to each graph (code lens, graph view)."""
    path = tmp_path / "clean.py"
    path.write_text(CASES["clean.py"], encoding="utf-8")
    passes = {p["name"]: p for p in _analyze_in_child(
        path, CASES["clean.py"], "[p.to_dict() for p in report.passes]")}
    (run,) = passes["relu_to_relu6"]["runs"]
    assert run["graph"] == "Net" and run["problem"] is None
    assert run["added"] == ["relu6"] and run["removed"] == ["relu"]
    assert [n["name"] for n in run["nodes"]] == ["relu6", "output"]  # output: rewired
    assert run["nodes"][0]["span"]["line"] == CASES["clean.py"].count(
        "\n", 0, CASES["clean.py"].index("gm.graph.call_function(torch.nn.functional")) + 1
    assert "relu6" in run["after"] and "relu6" not in run["before"]
    assert passes["Identity"]["runs"][0]["added"] == []


def test_the_text_analysed_not_the_file_on_disk(tmp_path):
    """An editor's unsaved buffer (one line more than on disk): the rewiring statement is
    still spanned whole, at its line in the buffer."""
    path = tmp_path / "graph_pass.py"
    path.write_text(CASES["graph_pass.py"], encoding="utf-8")
    text = "# unsaved line\n" + CASES["graph_pass.py"]
    found = _analyze_in_child(
        path, text, "[[d.code, d.span.to_dict()] for d in report.diagnostics]")
    needle = "first_call.args = (last_call, *first_call.args[1:])"
    line = text[: text.index(needle)].count("\n") + 1
    assert [(code, span["line"], span["end_col"] - span["col"]) for code, span in found] == [
        ("FX005", line, len(needle))]


RETURNS_A_VIEW = HEADER + '''class GraphView:
    """A pass's own result whose lookups raise KeyError (as Inductor's GraphView does)."""

    def __init__(self, children):
        self.children = children

    def __getattr__(self, name):
        return self.children[name]


def view_of(gm: fx.GraphModule):
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            gm.graph.call_function(torch.neg, (node,))
    return GraphView({})
'''


def test_a_pass_returning_an_object_that_raises_on_lookup_is_checked_in_place(tmp_path):
    """What a pass returns is the user's object: fxls reads it without letting its
    ``__getattr__`` raise into the analysis (torch's Inductor ``graph_view.py``, checked in
    place, was FX102 for a KeyError), and checks the graph it edited."""
    path = tmp_path / "view.py"
    path.write_text(RETURNS_A_VIEW, encoding="utf-8")
    found = _check(tmp_path, path)["view.py"]
    assert [d["code"] for d in found["diagnostics"]] == ["FX010"], found["diagnostics"]
    assert ranges(found, "FX010") == [
        lsp_range(RETURNS_A_VIEW, "gm.graph.call_function(torch.neg, (node,))")]


INDUCTOR_STYLE = HEADER + '''def same_dtype(match):
    """An Inductor pattern's extra_check: it takes a Match (nodes, graph, output_node() as
    a graph has, and kwargs as no graph has), not a graph."""
    return match.output_node().args[0].meta["val"].dtype == match.kwargs["dtype"]


class BatchFusion:
    """Inductor's group-batch fusions: fuse(graph, subset) with the subset its search found."""

    def fuse(self, graph: fx.Graph, subset: list[fx.Node]):
        first = subset[0]
        with graph.inserting_before(first):
            graph.call_function(torch.neg, (first,))


class Detector:
    """torch.ao's model-report detectors: a constructor that checks its arguments."""

    def __init__(self, ratio_threshold: float):
        if ratio_threshold <= 0 or ratio_threshold >= 1:
            raise ValueError("Make sure threshold is > 0 and < 1")
        self.ratio_threshold = ratio_threshold

    def determine_observer_insert_points(self, prepared: fx.GraphModule):
        return {n.name: n for n in prepared.graph.nodes}
'''


def test_a_pattern_check_is_no_pass_and_made_up_options_refused_are_no_problem(tmp_path):
    """Two shapes of torch's own Inductor passes: a ``match`` function is not run as a pass;
    a class pass that takes more than the graph, given made-up arguments (an empty subset,
    a threshold of 1.0), raises on them in its own method or constructor before touching the
    graph: not run, not reported."""
    path = tmp_path / "inductor_style.py"
    path.write_text(INDUCTOR_STYLE, encoding="utf-8")
    found = _check(tmp_path, path)["inductor_style.py"]
    assert found["diagnostics"] == []
    passes = {p["name"]: p for p in found["passes"]}
    assert set(passes) == {"BatchFusion", "Detector"}
    (run,) = passes["BatchFusion"]["runs"]
    assert run["problem"].startswith("not run: it wants options besides the graph (IndexError")
    (run,) = passes["Detector"]["runs"]
    assert run["problem"].startswith("not run: it wants options besides the graph (ValueError")
