"""What a pass really leaves, checked by a real `fxls check`: the graph it returns after a
final sort, the nodes it leaves unused, a result that cannot run, a result that computes
something else on realistic values, and messages that read as one steady line.

Each bug is in a pass written the way people write them, reported at its line with its
code and exact range; the correct twin of each pass gives nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.samples import NET_HEADER


def _with(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- 2: the graph a pass returns after a final sort ---------------------------------------
SORTED_AT_END = NET_HEADER + '''from torch.fx.passes.tools_common import legalize_graph


def relu_to_clamp(gm: fx.GraphModule) -> fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.relu:
            clamped = gm.graph.call_function(torch.clamp, node.args, {"min": 0.0})
            node.replace_all_uses_with(clamped)
            gm.graph.erase_node(node)
    legalize_graph(gm)
    return gm
'''
STABLE_SORTED_AT_END = _with(
    _with(SORTED_AT_END, "import legalize_graph", "import stable_topological_sort"),
    "    legalize_graph(gm)", "    stable_topological_sort(gm)")
# the bug: new nodes go to the end of the graph, after the output that now uses them
NOT_SORTED = _with(SORTED_AT_END, "    legalize_graph(gm)\n", "    gm.recompile()\n")

# -- 4: dead nodes ------------------------------------------------------------------------
KEPT_AFTER_REPLACE = NET_HEADER + '''def relu_to_clamp(gm: fx.GraphModule) -> fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_after(node):
                clamped = gm.graph.call_function(torch.clamp, node.args, {"min": 0.0})
            node.replace_all_uses_with(clamped)
    gm.recompile()
    return gm
'''
_REPLACE = "            node.replace_all_uses_with(clamped)\n"
ERASED_AFTER_REPLACE = _with(KEPT_AFTER_REPLACE, _REPLACE,
                             _REPLACE + "            gm.graph.erase_node(node)\n")

BACKBONE = '''import torch
import torch.fx as fx
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


'''
FEATURES_ONLY = BACKBONE + '''def features_only(gm: fx.GraphModule) -> fx.GraphModule:
    features = next(n for n in gm.graph.nodes if n.op == "call_module" and n.target == "body")
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = (features,)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm
'''
TAIL_LEFT = _with(FEATURES_ONLY, "    gm.graph.eliminate_dead_code()\n", "")

# a Transformer copies what it does not replace: a node whose only user it dropped is left
TRANSFORMER_LEAVES = '''import torch
import torch.fx as fx
from torch import nn


class WithAux(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.aux = nn.Linear(8, 8)

    def forward(self, x):
        return self.body(x) + self.aux(x) * 0.0


class DropAux(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target.__name__ == "add":
            return args[0]
        return super().call_function(target, args, kwargs)
'''

# -- 5: a result that cannot run ----------------------------------------------------------
TUPLE_FOR_TENSOR = BACKBONE + '''def pack_head_input(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_module" and node.target == "head":
            node.args = ((node.args[0],),)
    gm.recompile()
    return gm
'''
TENSOR_KEPT = _with(TUPLE_FOR_TENSOR, "node.args = ((node.args[0],),)",
                    "node.args = (node.args[0],)")

# -- 6: wrong fusions on realistic values, two outputs -----------------------------------
CONV_BN = '''import copy

import torch
import torch.fx as fx
from torch import nn


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8, affine=False)

    def forward(self, x):
        return self.bn2(self.conv2(torch.relu(self.bn(self.conv(x)))))


def fold(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    scale = torch.rsqrt(bn.running_var + bn.eps)
    shift = torch.zeros_like(bn.running_mean)
    if bn.affine:
        scale, shift = scale * bn.weight, bn.bias
    fused = copy.deepcopy(conv)
    fused.weight = nn.Parameter(conv.weight * scale.reshape(-1, 1, 1, 1))
    fused.bias = nn.Parameter((conv.bias - bn.running_mean) * scale + shift)
    return fused


def fuse_conv_bn(gm: fx.GraphModule) -> fx.GraphModule:
    modules = dict(gm.named_modules())
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv = node.args[0]
        setattr(gm, conv.target, fold(modules[conv.target], modules[node.target]))
        node.replace_all_uses_with(conv)
        gm.graph.erase_node(node)
    gm.recompile()
    return gm
'''
# the conv's bias is shifted but not scaled: 5e-7 off on a fresh BatchNorm (variance 1)
BIAS_NOT_SCALED = _with(CONV_BN, "(conv.bias - bn.running_mean) * scale + shift",
                        "conv.bias - bn.running_mean * scale + shift")
# a BatchNorm without affine parameters taken for a shift alone: its variance is ignored
NO_AFFINE_AS_SHIFT = _with(CONV_BN, "    scale = torch.rsqrt(bn.running_var + bn.eps)\n",
                           "    scale = torch.ones_like(bn.running_var)\n")

# the file's own model, calibrated at import (small variances): an epsilon of 1e-4 instead of
# the BatchNorm's 1e-5 is rounding on fresh or randomised statistics, 30% on these
CALIBRATED = '''import torch
import torch.fx as fx
from torch import nn


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(self.conv(x))


def fold_into_conv(gm: fx.GraphModule) -> fx.GraphModule:
    conv, bn = gm.conv, gm.bn
    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
    with torch.no_grad():
        conv.weight.mul_(scale.reshape(-1, 1, 1, 1))
        conv.bias.copy_((conv.bias - bn.running_mean) * scale + bn.bias)
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and node.target == "bn":
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


model = ConvBn().eval()
with torch.no_grad():
    model.bn.running_mean.copy_(torch.linspace(-1.0, 1.0, 8))
    model.bn.running_var.copy_(torch.linspace(1e-4, 1e-3, 8))
'''
WRONG_EPS = _with(CALIBRATED, "bn.running_var + bn.eps", "bn.running_var + 1e-4")
WRONG_EPS_UNCALIBRATED = WRONG_EPS[: WRONG_EPS.index("model = ConvBn()")]

RETURNS_FEATURES = BACKBONE + '''def also_return_features(gm: fx.GraphModule) -> fx.GraphModule:
    features = next(n for n in gm.graph.nodes if n.op == "call_module" and n.target == "body")
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.args = ((output.args[0], features),)
    gm.recompile()
    return gm
'''
SECOND_OUTPUT = _with(RETURNS_FEATURES, "    output.args = ((output.args[0], features),)\n",
                      "    gm.graph.output((features,))\n")

# -- 7: messages --------------------------------------------------------------------------
SELF_WIRED = NET_HEADER + '''def abs_after_relu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_after(node):
                absolute = gm.graph.call_function(torch.abs, (node,))
            node.replace_all_uses_with(absolute)
    gm.recompile()
    return gm
'''
NOT_SELF_WIRED = _with(SELF_WIRED, "node.replace_all_uses_with(absolute)",
                       "node.replace_all_uses_with(absolute, delete_user_cb=lambda user: "
                       "user is not absolute)")

CRASH_HALF_WAY = NET_HEADER + '''def abs_then_refuse(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function":
            with gm.graph.inserting_after(node):
                gm.graph.call_function(torch.abs, (node,))
            raise ValueError(f"cannot rewrite {node.target}")
    return gm


abs_then_refuse(fx.symbolic_trace(Net()))
'''

LINT_AT_IMPORT = NET_HEADER + '''def negate_before_relu(graph: fx.Graph) -> None:
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with graph.inserting_before(node):
                graph.call_function(torch.neg, (node,))


traced = fx.symbolic_trace(Net())
negate_before_relu(traced.graph)
traced.graph.lint()
'''

UNNAMED_AT_IMPORT = NET_HEADER + '''def negate_before_relu(graph):
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with graph.inserting_before(node):
                neg = graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)


negate_before_relu(fx.symbolic_trace(Net()).graph)
'''

CASES: dict[str, str] = {
    "sorted_at_end.py": SORTED_AT_END,
    "stable_sorted_at_end.py": STABLE_SORTED_AT_END,
    "not_sorted.py": NOT_SORTED,
    "kept_after_replace.py": KEPT_AFTER_REPLACE,
    "erased_after_replace.py": ERASED_AFTER_REPLACE,
    "features_only.py": FEATURES_ONLY,
    "tail_left.py": TAIL_LEFT,
    "transformer_leaves.py": TRANSFORMER_LEAVES,
    "tuple_for_tensor.py": TUPLE_FOR_TENSOR,
    "tensor_kept.py": TENSOR_KEPT,
    "conv_bn.py": CONV_BN,
    "bias_not_scaled.py": BIAS_NOT_SCALED,
    "no_affine_as_shift.py": NO_AFFINE_AS_SHIFT,
    "calibrated.py": CALIBRATED,
    "wrong_eps.py": WRONG_EPS,
    "wrong_eps_uncalibrated.py": WRONG_EPS_UNCALIBRATED,
    "returns_features.py": RETURNS_FEATURES,
    "second_output.py": SECOND_OUTPUT,
    "self_wired.py": SELF_WIRED,
    "not_self_wired.py": NOT_SELF_WIRED,
    "crash_half_way.py": CRASH_HALF_WAY,
    "lint_at_import.py": LINT_AT_IMPORT,
    "unnamed_at_import.py": UNNAMED_AT_IMPORT,
}

CLEAN = ["sorted_at_end.py", "stable_sorted_at_end.py", "erased_after_replace.py",
         "features_only.py", "tensor_kept.py", "conv_bn.py", "calibrated.py",
         "returns_features.py",
         "not_self_wired.py"]


def _fxls(folder: Path, *arguments: str) -> str:
    done = subprocess.run([sys.executable, "-m", "fxls", "check", *arguments, str(folder)],
                          capture_output=True, text=True, timeout=600, cwd=folder)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pass_results")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\n", encoding="utf-8")
    for name, text in CASES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def results(folder: Path) -> dict[str, dict]:
    found = json.loads(_fxls(folder, "--format", "json", "--no-progress"))
    return {Path(f["path"]).name: f for f in found["files"]}


def codes(file_result: dict) -> list[str]:
    return sorted(d["code"] for d in file_result["diagnostics"])


@pytest.mark.parametrize("name", CLEAN)
def test_the_correct_twin_gives_nothing(results, name):
    assert results[name]["diagnostics"] == [], results[name]["diagnostics"]


def test_no_false_fx005_after_a_final_sort_but_the_forgotten_sort_is_reported(results):
    """torch's merge_matmul ends with legalize_graph(gm): the graph it returns is sorted.
    Without the sort, the output uses `clamp` before it: at the line that made that use."""
    assert ranges(results["not_sorted.py"], "FX005") == [
        lsp_range(NOT_SORTED, "node.replace_all_uses_with(clamped)")]
    assert "`output` uses `clamp` before it is defined" in (
        results["not_sorted.py"]["diagnostics"][0]["message"])


def test_a_node_kept_after_replace_all_uses_with(results):
    found = results["kept_after_replace.py"]
    assert ranges(found, "FX010") == [
        lsp_range(KEPT_AFTER_REPLACE, "node.replace_all_uses_with(clamped)")]
    assert codes(found) == ["FX010"]
    (item,) = found["diagnostics"]
    assert item["message"].startswith("`relu` is no longer used after this line")
    assert item["severity"] == "warning"


def test_the_tail_left_computing_without_eliminate_dead_code(results):
    """Only the end of the dead tail has no users: one FX010, at the rewiring statement."""
    found = results["tail_left.py"]
    assert ranges(found, "FX010") == [lsp_range(TAIL_LEFT, "output.args = (features,)")]
    assert codes(found) == ["FX010"]
    assert "`head`" in found["diagnostics"][0]["message"]


def test_a_node_a_transformer_stopped_using_is_reported_at_the_transformer(results):
    found = results["transformer_leaves.py"]
    assert ranges(found, "FX010") == [lsp_range(TRANSFORMER_LEAVES, "DropAux")]
    assert codes(found) == ["FX010"]
    assert "the pass leaves `mul` computed but unused" in found["diagnostics"][0]["message"]


def test_a_result_that_raises_on_the_inputs(results):
    found = results["tuple_for_tensor.py"]
    assert ranges(found, "FX004") == [
        lsp_range(TUPLE_FOR_TENSOR, "node.args = ((node.args[0],),)")]
    assert codes(found) == ["FX004"]
    message = found["diagnostics"][0]["message"]
    assert "`pack_head_input`'s result raises on the example inputs at its node `head`" in message
    assert "TypeError" in message and "tuple" in message


@pytest.mark.parametrize("name", ["bias_not_scaled.py", "no_affine_as_shift.py"])
def test_a_wrong_fusion_shows_on_realistic_batch_norm_statistics(results, name):
    found = results[name]
    assert ranges(found, "FX017") == [lsp_range(CASES[name], "fuse_conv_bn")]
    assert codes(found) == ["FX017"]
    message = found["diagnostics"][0]["message"]
    difference = float(message.rpartition("the largest absolute difference is ")[2])
    assert difference > 1e-3, message


def test_outputs_are_compared_on_the_files_own_calibrated_model(results):
    """The same wrong epsilon is rounding where the file keeps no calibrated model."""
    found = results["wrong_eps.py"]
    assert ranges(found, "FX017") == [lsp_range(WRONG_EPS, "fold_into_conv")]
    assert codes(found) == ["FX017"]
    assert results["wrong_eps_uncalibrated.py"]["diagnostics"] == []


def test_a_second_output_node(results):
    found = results["second_output.py"]
    assert ranges(found, "FX006") == [lsp_range(SECOND_OUTPUT, "gm.graph.output((features,))")]
    assert codes(found) == ["FX006"]
    assert "second `output` node" in found["diagnostics"][0]["message"]


def test_a_node_wired_to_itself_uses_itself(results):
    found = results["self_wired.py"]
    assert ranges(found, "FX005") == [
        lsp_range(SELF_WIRED, "node.replace_all_uses_with(absolute)")]
    (item,) = [d for d in found["diagnostics"] if d["code"] == "FX005"]
    assert re.match(r"node `abs(_1)?` uses itself: the graph has a cycle", item["message"])
    assert "before it is defined" not in item["message"]


def test_a_pass_that_crashes_half_way_gets_the_crash_alone(results):
    found = results["crash_half_way.py"]
    assert codes(found) == ["FX004", "FX100"] or codes(found) == ["FX100"], found
    assert not [d for d in found["diagnostics"] if d["code"] == "FX010"]
    for item in found["diagnostics"]:
        assert not re.search(r"0x[0-9a-f]{6,}", item["message"]), item["message"]


def test_a_graph_built_at_import_reads_naturally(results):
    found = results["unnamed_at_import.py"]
    assert set(ranges(found, "FX005")) == {
        lsp_range(UNNAMED_AT_IMPORT, "graph.call_function(torch.neg, (node,))")}
    messages = [d["message"] for d in found["diagnostics"] if d["code"] == "FX005"]
    assert any(m.endswith("(in a graph built at import)") for m in messages), messages
    assert not any("graph of `a graph" in m for m in messages), messages


def test_the_text_format_is_one_line_per_diagnostic_and_steady(folder, results):
    """torch.fx's lint error holds the whole graph; reprs hold addresses: neither shows. The
    text run says what the JSON run (another analysis of the same files) said, line by line."""
    first = _fxls(folder, "--no-progress")
    lines = first.splitlines()
    assert lines and all(re.match(r"^\S+\.py:\d+:\d+: FX\d{3} ", line) for line in lines), first
    lint = [line for line in lines if line.startswith(str(folder / "lint_at_import.py"))
            or "lint_at_import.py:" in line]
    assert lint and all("graph():" not in line for line in lint), lint
    assert not re.search(r"0x[0-9a-f]{6,}", first)
    in_json = [f"{d.get('path', report['path'])}:{d['range']['start']['line'] + 1}:"
               f"{d['range']['start']['character'] + 1}: {d['code']} {d['message']}"
               for report in results.values() for d in report["diagnostics"]]
    assert lines == in_json


def test_a_kept_node_is_fixed_by_eliminate_dead_code_not_by_deleting_its_line():
    """The line that took the last use away is no computation to delete."""
    from fxls.fixes import apply_edits, fixes_for
    from fxls.report import Diagnostic, Span

    needle = "node.replace_all_uses_with(clamped)"
    before = KEPT_AFTER_REPLACE[: KEPT_AFTER_REPLACE.index(needle)]
    line, col = before.count("\n") + 1, len(before) - before.rfind("\n") - 1
    item = Diagnostic("FX010", "warning", "m", Span("m.py", line, line, col, col + len(needle)),
                      "relu_to_clamp", data={"pass": "relu_to_clamp", "dead_code": True,
                                             "kept": True})
    (fix,) = fixes_for(KEPT_AFTER_REPLACE, item)
    assert "eliminate_dead_code" in fix.title and fix.safe
    assert apply_edits(KEPT_AFTER_REPLACE, fix.edits) == KEPT_AFTER_REPLACE.replace(
        "    gm.recompile()\n", "    gm.graph.eliminate_dead_code()\n    gm.recompile()\n")
