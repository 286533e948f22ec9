"""FX passes as people write them, on torchvision's resnet18, through a real `fxls check`.

Optional: skipped unless the model zoo is installed (`.venv/bin/python
scripts/install_model_zoo.py`, folder `~/.cache/fxls-model-zoo` or `$FXLS_MODEL_ZOO`).

Each file builds its model from torchvision (`Net` wraps `resnet18()`: fxls traces the
file's classes, 71 nodes here) and holds a real pass: torch's own
`torch.fx.experimental.optimization.fuse` (from a pass function, and at import), the
conv-bn fuser of the PyTorch FX tutorial (`fuse(model: nn.Module) -> nn.Module`, traces
inside, `fuse_conv_bn_eval`, erases the bn nodes), an `fx.Transformer` (relu -> gelu),
`subgraph_rewriter.replace_pattern`, a pass that inserts a node after each conv, a graph copy
with `node_copy`, a `PassBase` in a `PassManager`. Clean, they give no error or warning, and
FX017 only where the outputs really change (relu -> gelu). Then the same passes with one bug
put in, each reported at exactly the line of the bug (found in the text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()
SITE = ZOO / "site"

pytestmark = pytest.mark.skipif(
    not (SITE / "torchvision" / "models" / "resnet.py").is_file(),
    reason=f"model zoo not installed in {ZOO} (scripts/install_model_zoo.py)",
)

MODEL = '''import copy

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval
from torchvision.models import resnet18


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = resnet18()

    def forward(self, x):
        return self.body(x)

'''

TORCH_FUSE = MODEL + '''from torch.fx.experimental.optimization import fuse as torch_fuse
from torch.fx.experimental.optimization import remove_dropout


def fuse_model(gm: fx.GraphModule) -> fx.GraphModule:
    gm = torch_fuse(gm)
    return remove_dropout(gm)
'''

TORCH_FUSE_AT_IMPORT = MODEL + '''from torch.fx.experimental.optimization import fuse as torch_fuse

fused = torch_fuse(Net().eval())
traced = fx.symbolic_trace(Net().eval())
fused_traced = torch_fuse(traced)
'''

# the conv-bn fuser of the PyTorch FX tutorial (fx_conv_bn_fuser), as people copy it
TUTORIAL_FUSER = MODEL + '''
def _parent_name(target: str) -> tuple[str, str]:
    *parent, name = target.rsplit(".", 1)
    return parent[0] if parent else "", name


def replace_node_module(node: fx.Node, modules: dict, new_module: nn.Module) -> None:
    parent_name, name = _parent_name(node.target)
    setattr(modules[parent_name], name, new_module)


def fuse(model: nn.Module) -> nn.Module:
    model = copy.deepcopy(model)
    fx_model: fx.GraphModule = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv_node = node.args[0]
        if conv_node.op != "call_module" or not isinstance(modules[conv_node.target], nn.Conv2d):
            continue
        if len(conv_node.users) > 1:
            continue
        fused_conv = fuse_conv_bn_eval(modules[conv_node.target], modules[node.target])
        replace_node_module(conv_node, modules, fused_conv)
        node.replace_all_uses_with(conv_node)
        fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.delete_all_unused_submodules()
    fx_model.recompile()
    return fx_model
'''

TRANSFORMER = MODEL + '''
class ReluToGelu(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target in (torch.relu, F.relu):
            return super().call_function(F.gelu, args[:1], {})
        return super().call_function(target, args, kwargs)

    def call_module(self, target, args, kwargs):
        if isinstance(self.fetch_attr(target), nn.ReLU):
            return super().call_function(F.gelu, args, {})
        return super().call_module(target, args, kwargs)
'''

REPLACE_PATTERN = MODEL + '''from torch.fx import subgraph_rewriter


def pattern(x):
    return torch.flatten(x, 1)


def replacement(x):
    return x.reshape(x.size(0), -1)


def add_pattern(x, y):
    return x + y


def add_replacement(x, y):
    return torch.add(x, y)


def flatten_to_reshape(gm: fx.GraphModule) -> fx.GraphModule:
    subgraph_rewriter.replace_pattern(gm, pattern, replacement)
    return gm


def add_to_torch_add(gm: fx.GraphModule) -> fx.GraphModule:
    matches = subgraph_rewriter.replace_pattern(gm, add_pattern, add_replacement)
    assert len(matches) == 8
    gm.recompile()
    return gm
'''

INSERT_AFTER = MODEL + '''
def conv_outputs_channels_last(gm: fx.GraphModule) -> fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not isinstance(gm.get_submodule(node.target), nn.Conv2d):
            continue
        with gm.graph.inserting_after(node):
            converted = gm.graph.call_method(
                "contiguous", (node,), {"memory_format": torch.channels_last})
        node.replace_all_uses_with(converted, delete_user_cb=lambda user: user is not converted)
    gm.recompile()
    return gm
'''

GRAPH_COPY = MODEL + '''
def relu_modules_to_functions(gm: fx.GraphModule) -> fx.GraphModule:
    modules = dict(gm.named_modules())
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(modules[node.target], nn.ReLU):
            env[node] = graph.call_function(torch.relu, (env[node.args[0]],))
        else:
            env[node] = graph.node_copy(node, lambda n: env[n])
    return fx.GraphModule(gm, graph)
'''

PASS_MANAGER = MODEL + '''from torch.fx.passes.infra.pass_base import PassBase, PassResult
from torch.fx.passes.infra.pass_manager import PassManager


class RetargetRelu(PassBase):
    def call(self, gm: fx.GraphModule) -> PassResult:
        modules = dict(gm.named_modules())
        changed = False
        for node in gm.graph.nodes:
            if node.op == "call_module" and isinstance(modules[node.target], nn.ReLU):
                node.op = "call_function"
                node.target = torch.relu
                changed = True
        return PassResult(gm, changed)


def dead_code(gm: fx.GraphModule) -> PassResult:
    changed = gm.graph.eliminate_dead_code()
    gm.recompile()
    return PassResult(gm, changed)


manager = PassManager(passes=[RetargetRelu(), dead_code])
'''

#: clean files -> the passes expected to give FX017 (they really change the outputs)
CLEAN: dict[str, tuple[str, set[str]]] = {
    "torch_fuse.py": (TORCH_FUSE, set()),
    "torch_fuse_at_import.py": (TORCH_FUSE_AT_IMPORT, set()),
    "tutorial_fuser.py": (TUTORIAL_FUSER, set()),
    "relu_to_gelu.py": (TRANSFORMER, {"ReluToGelu"}),
    "replace_pattern.py": (REPLACE_PATTERN, set()),
    "insert_after.py": (INSERT_AFTER, set()),
    "graph_copy.py": (GRAPH_COPY, set()),
    "pass_manager.py": (PASS_MANAGER, set()),
}


def _swap(text: str, first: str, second: str) -> str:
    block = first + second
    assert block in text, block
    return text.replace(block, second + first, 1)


def _without(text: str, line: str) -> str:
    assert line in text, line
    return text.replace(line, "", 1)


def _with(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


#: file -> (source, code, the text of the line it must be reported at, where on that line
#: the range starts)
BUGGY: dict[str, tuple[str, str, str, str]] = {
    # erase the bn node while it still has users: torch.fx raises in erase_node
    "tutorial_erase_before_replace.py": (
        _swap(TUTORIAL_FUSER, "        node.replace_all_uses_with(conv_node)\n",
              "        fx_model.graph.erase_node(node)\n"),
        "FX004", "        fx_model.graph.erase_node(node)\n", "fx_model.graph.erase_node("),
    # the fuser forgets recompile(): the returned module still runs conv -> bn
    "tutorial_no_recompile.py": (
        _without(TUTORIAL_FUSER, "    fx_model.recompile()\n"),
        "FX007", "    return fx_model\n", "return fx_model"),
    # inserting_before where inserting_after was meant: `contiguous` uses the conv before it
    "insert_before.py": (
        _with(INSERT_AFTER, "inserting_after(node)", "inserting_before(node)"),
        "FX005", "            converted = gm.graph.call_method(\n", "gm.graph.call_method("),
    "insert_no_recompile.py": (
        _without(INSERT_AFTER, "    gm.recompile()\n"),
        "FX007", "    return gm\n", "return gm"),
    # a graph copy that forgets to map the relu's input through env: a node of the old graph
    "graph_copy_foreign_node.py": (
        _with(GRAPH_COPY, "(env[node.args[0]],)", "(node.args[0],)"),
        "FX006", "            env[node] = graph.call_function(torch.relu, (node.args[0],))\n",
        "graph.call_function("),
    # the inserted nodes are never wired in
    "insert_unused.py": (
        _without(INSERT_AFTER, "        node.replace_all_uses_with(converted, delete_user_cb="
                 "lambda user: user is not converted)\n"),
        "FX010", "            converted = gm.graph.call_method(\n", "gm.graph.call_method("),
    # the same bug in a pass that ends with graph.lint(), as the tutorial's fuser does
    "insert_before_then_lint.py": (
        _with(_with(INSERT_AFTER, "inserting_after(node)", "inserting_before(node)"),
              "    gm.recompile()\n", "    gm.graph.lint()\n    gm.recompile()\n"),
        "FX005", "            converted = gm.graph.call_method(\n", "gm.graph.call_method("),
}

#: bugs fxls does not report at their line yet (see the reason)
XFAIL: dict[str, str] = {}


def _line_of(text: str, line: str) -> int:
    """0-based (LSP) line number of the only line equal to ``line``."""
    lines = text.splitlines(keepends=True)
    found = [i for i, each in enumerate(lines) if each == line]
    assert len(found) == 1, (line, found)
    return found[0]


def _check(folder: Path, timeout: float = 900) -> dict[str, dict]:
    fxls = REPO / ".venv" / "bin" / "fxls"
    cmd = [str(fxls)] if fxls.exists() else [sys.executable, "-m", "fxls"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SITE), env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [*cmd, "check", "--format", "json", "--no-progress", "--timeout", "240", str(folder)],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=folder,
    )
    assert result.stdout, result.stderr[-3000:]
    return {Path(f["path"]).name: f for f in json.loads(result.stdout)["files"]}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("real_passes")
    for name, (text, *_) in {**CLEAN, **BUGGY}.items():
        (folder / name).write_text(text)
    return _check(folder)


def _model_traced(report: dict) -> None:
    (net,) = [m for m in report["modules"] if m["name"] == "Net"]
    assert net["status"] == "traced" and net["nodes"] >= 60, net


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_real_pass_gives_no_false_report(reports: dict[str, dict], name: str) -> None:
    report = reports[name]
    _model_traced(report)
    wrong = [d for d in report["diagnostics"] if d["severity"] in ("error", "warning")]
    assert wrong == [], wrong
    expected = CLEAN[name][1]
    changed = {d["module"] for d in report["diagnostics"] if d["code"] == "FX017"}
    assert changed == expected, report["diagnostics"]
    others = [d for d in report["diagnostics"] if d["code"] != "FX017"]
    assert others == [], others


def test_relu_to_gelu_is_reported_where_the_transformer_is_defined(
        reports: dict[str, dict]) -> None:
    text = CLEAN["relu_to_gelu.py"][0]
    (item,) = [d for d in reports["relu_to_gelu.py"]["diagnostics"] if d["code"] == "FX017"]
    assert item["severity"] == "information"
    assert "`Net`" in item["message"]
    line = _line_of(text, "class ReluToGelu(fx.Transformer):\n")
    assert item["range"]["start"] == {"line": line, "character": 6}
    assert item["range"]["end"] == {"line": line, "character": 6 + len("ReluToGelu")}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(reason=XFAIL[name], strict=True))
    if name in XFAIL else name for name in sorted(BUGGY)])
def test_bug_in_a_real_pass_is_reported_at_its_line(reports: dict[str, dict], name: str
                                                    ) -> None:
    text, code, line_text, start = BUGGY[name]
    report = reports[name]
    _model_traced(report)
    found = [d for d in report["diagnostics"] if d["code"] == code]
    assert len(found) == 1, report["diagnostics"]
    (item,) = found
    line = _line_of(text, line_text)
    assert item["range"]["start"]["line"] == line, (item, line_text)
    assert item["range"]["start"]["character"] == line_text.index(start), item
    # it ran on the file's resnet18, not on a representative graph
    assert "`Net`" in item["message"] and "representative" not in item["message"], item
    others = [d for d in report["diagnostics"]
              if d["code"] != code and d["severity"] in ("error", "warning")]
    assert others == [], others


MODULE_LEVEL_MODEL = _with(
    _swap(TUTORIAL_FUSER, "        node.replace_all_uses_with(conv_node)\n",
          "        fx_model.graph.erase_node(node)\n"),
    MODEL, "import copy\n\nimport torch\nfrom torch import fx, nn\n"
    "from torch.nn.utils.fusion import fuse_conv_bn_eval\nfrom torchvision.models import "
    "resnet18\n\nmodel = resnet18()\n")


def test_passes_run_on_a_model_built_at_module_level(tmp_path: Path) -> None:
    (tmp_path / "module_level.py").write_text(MODULE_LEVEL_MODEL)
    report = _check(tmp_path)["module_level.py"]
    (item,) = [d for d in report["diagnostics"] if d["code"] == "FX004"]
    assert item["range"]["start"]["line"] == _line_of(
        MODULE_LEVEL_MODEL, "        fx_model.graph.erase_node(node)\n")
    assert "representative" not in item["message"], item["message"]
