"""Every error fxls reports is one torch.fx would hit: model-zoo idioms that are fine must
not be reported (real `fxls check` in the worker; expected ranges derived from the text).
Each case is also given to `torch.fx.symbolic_trace` itself (`torchfx_reference`): fxls
reports an error on a class exactly when torch.fx fails on it or traces it wrong."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.diagnostics.test_codes import HEADER, lsp_range, ranges
from tests.diagnostics.torchfx_reference import fxls_reports_error, torchfx_verdict

CASES: dict[str, str] = {
    # a BatchNorm+activation layer that reads self.training, as model zoos write it: traced
    # in eval mode (the default) it matches its eager eval forward
    "bn_act.py": HEADER + '''class BnAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.drop_rate = 0.5

    def forward(self, x):
        x = self.bn(x)
        if self.drop_rate > 0 and self.training:
            x = F.dropout(x, self.drop_rate, self.training)
        return x.relu()
''',
    # shapes unpacked with one name unused; an unused size product; real dead tensor work
    "shapes.py": HEADER + '''class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        B, N, C = x.shape
        area = N * C
        unused = self.proj(x)
        return x.reshape(B, N * C)
''',
    "huge.py": HEADER + '''class Huge(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.zeros(1024, 1024, 600))  # 2.4 GB

    def forward(self, x):
        return x * self.table.sum()
''',
    "embed.py": HEADER + '''class PatchEmbed(nn.Module):
    def __init__(self, img_size=64, patch=16):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.proj = nn.Conv2d(3, 8, patch, patch)

    def forward(self, x):
        B, C, H, W = x.shape
        torch._assert(H == self.img_size[0], f"Input height ({H}) doesn't match model")
        return self.proj(x).flatten(2).transpose(1, 2)


class Picky(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        torch._assert(x.shape[-1] == 100, "Input width must be 100")
        return self.proj(x)
''',
    "blocks.py": HEADER + '''class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).unbind(2)
        return (q * k * v).reshape(B, N, C)


class WindowBlock(nn.Module):
    def __init__(self, dim, window):
        super().__init__()
        self.window = window
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        torch._assert(x.shape[1] == 16, "the window grid must be 16 high")  # 64 // 4
        return self.norm(x) * self.window


class Net(nn.Module):
    def __init__(self, block=WindowBlock, img_size=64):
        super().__init__()
        self.img_size = img_size
        self.stem = nn.Conv2d(3, 16, 4, 4)
        self.block = block(16, window=3)

    def forward(self, x):
        x = self.stem(x).permute(0, 2, 3, 1)  # B, H, W, C as windowed blocks take it
        return self.block(x)
''',
    "bases.py": HEADER + '''class PreTrainedModel(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        self.config = config


class Model(PreTrainedModel):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
''',
    "stats.py": HEADER + '''class Stats(nn.Module):
    def forward(self, x):
        means = torch.zeros([3, 8])
        for i in range(3):
            means[i] = torch.mean(x[:, i], dim=0)
        return means
''',
    "dense.py": HEADER + '''class DenseLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if isinstance(h, torch.Tensor):  # False while tracing: a Proxy is not a Tensor
            prev = [h]
        else:
            prev = h  # (a list of features, in the real model)
        return torch.cat(prev, 1)
''',
    "rope.py": HEADER + '''class RopeAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x, rope=None):
        h = F.linear(x, self.w)  # the input's width comes from the weight
        if rope is not None:  # a Proxy is never None: the graph always applies rope
            h = h * rope.chunk(2, -1)[0]
        return h
''',
    "cached.py": HEADER + '''class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, past=None):
        seen = past.float() if past is not None else 0  # a Proxy is never None
        return self.lin(x)
''',
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("precision")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 30\n", encoding="utf-8")
    for name, text in CASES.items():
        (folder / name).write_text(text, encoding="utf-8")
    fxls = [sys.executable, "-m", "fxls", "check", "--format", "json", str(folder)]
    done = subprocess.run(fxls, capture_output=True, text=True, timeout=240, cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}


def check_file(path: Path, env: dict[str, str] | None = None) -> dict:
    """`fxls check --format json` on one file (run from its folder): that file's result."""
    fxls = [sys.executable, "-m", "fxls", "check", "--format", "json", str(path)]
    done = subprocess.run(fxls, capture_output=True, text=True, timeout=240, cwd=path.parent,
                          env=env)
    assert done.returncode in (0, 1), done.stderr
    (result,) = json.loads(done.stdout)["files"]
    return result


def agrees_with_torch_fx(result: dict, source: str, class_name: str, *inputs: object) -> str:
    """fxls's verdict on ``class_name`` is torch.fx's (`symbolic_trace` of the same class, the
    graph run against eager on ``inputs``); returns torch.fx's verdict kind."""
    verdict = torchfx_verdict(source, class_name, inputs)
    assert fxls_reports_error(result, class_name) == verdict.error, (verdict, result)
    return verdict.kind


def test_training_checks_are_traced_in_eval_mode_and_match_eager(results):
    result = results["bn_act.py"]
    assert result["diagnostics"] == []
    assert result["modules"][0]["status"] == "traced"
    assert agrees_with_torch_fx(result, CASES["bn_act.py"], "BnAct",
                                torch.randn(4, 8)) == "agrees"


def test_train_mode_is_a_setting(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fxls]\ntrace_mode = "train"\n')
    path = tmp_path / "bn_act.py"
    path.write_text(CASES["bn_act.py"], encoding="utf-8")
    result = check_file(path)
    # traced with training=True: the dropout is in the graph, and the eager run is in train
    # mode too (same seed): no FX014
    assert [d["code"] for d in result["diagnostics"]] == []
    assert result["modules"][0]["nodes"] == 5  # x, bn, dropout, relu, output


def test_dead_code_only_for_tensor_work_at_its_own_span(results):
    text = CASES["shapes.py"]
    assert ranges(results["shapes.py"], "FX010") == [lsp_range(text, "self.proj(x)")]
    assert agrees_with_torch_fx(results["shapes.py"], text, "Tokens",
                                torch.randn(2, 4, 8)) == "agrees"


def test_a_model_too_big_to_build_is_traced_on_the_meta_device(results):
    result = results["huge.py"]
    assert result["diagnostics"] == []
    (huge,) = result["modules"]
    assert (huge["status"], huge["entry"]) == ("traced", "on the meta device")


def test_running_out_of_memory_names_the_setting(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.fxls]\nmemory_limit_mb = 1500\n")
    path = tmp_path / "greedy.py"
    path.write_text(HEADER + '''class Greedy(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = bytearray(3 * 1024**3)  # not a tensor: too big on any device

    def forward(self, x):
        return x * 2
''', encoding="utf-8")
    result = check_file(path)
    (found,) = result["diagnostics"]
    assert found["code"] == "FX102", found
    assert "ran out of memory" in found["message"]
    assert "`memory_limit_mb` in [tool.fxls]" in found["message"]
    assert result["modules"][0]["status"] == "failed"

def test_image_inputs_at_the_size_the_model_asks_for_and_a_failed_run_is_said(results):
    text = CASES["embed.py"]
    result = results["embed.py"]
    assert [d["module"] for d in result["diagnostics"] if d["code"] == "FX015"] == ["Picky"]
    (failed,) = [d for d in result["diagnostics"] if d["code"] == "FX015"]
    assert ranges(result, "FX015") == [lsp_range(text, "Picky")]
    assert "tensor(2, 3, 32, 32)" in failed["message"]
    assert "Input width must be 100" in failed["message"]
    assert "# fxls: args" in failed["message"]
    # torch.fx traces both (torch._assert becomes a node); on these inputs Picky's graph and
    # eager forward both raise: information, not an error
    assert agrees_with_torch_fx(result, text, "PatchEmbed", torch.randn(2, 3, 64, 64)) == "agrees"
    assert agrees_with_torch_fx(result, text, "Picky", torch.randn(2, 3, 32, 32)) == "agrees"


def test_blocks_get_token_inputs_and_harvested_ones_the_inputs_their_root_gives(results):
    text = CASES["blocks.py"]
    result = results["blocks.py"]
    assert result["diagnostics"] == []  # no FX015: every class ran on its inputs
    modules = {m["name"]: m for m in result["modules"]}
    assert modules["WindowBlock"]["via"] == "Net"
    assert modules["Attention"]["entry"].startswith("Attention(dim=32, num_heads=4)")
    assert agrees_with_torch_fx(result, text, "Net", torch.randn(2, 3, 64, 64)) == "agrees"


def test_a_problem_inside_library_code_is_said_where_it_is(tmp_path, monkeypatch):
    library = tmp_path / "site" / "padlib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "padding.py").write_text(
        "import torch.nn.functional as F\n\n\n"
        "def pad_same(x, k):\n"
        "    if x.shape[-1] % k != 0 or x.sum() > 0:\n"
        "        x = F.pad(x, (0, 1))\n"
        "    return x\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 30\n")
    text = HEADER + '''from padlib.padding import pad_same


class Net(nn.Module):
    def forward(self, x):
        return pad_same(x, 3) * 2
'''
    (project / "net.py").write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    result = check_file(project / "net.py", env)
    (found,) = [d for d in result["diagnostics"] if d["code"] == "FX001"]
    assert ranges(result, "FX001") == [lsp_range(text, "pad_same(x, 3)")]
    assert found["message"].startswith(
        "a data-dependent branch inside `padlib.padding.pad_same` (padding.py:5), reached "
        "from here")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert agrees_with_torch_fx(result, text, "Net", torch.randn(2, 4, 6)) == "fails"

    # the quick fix keeps that library function opaque; with it the module traces cleanly
    from fxls.analysis_runs.request import AnalysisRequest
    from fxls.analysis_runs.runs import analyze_many
    from fxls.fixes import apply_edits, fixes_for
    from fxls.project.settings import load_settings

    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    path = project / "net.py"
    request = AnalysisRequest(str(path), text, load_settings(path))
    (report,) = asyncio.run(analyze_many([request], python=sys.executable, jobs=1))
    (diagnostic,) = [d for d in report.diagnostics if d.code == "FX001"]
    assert diagnostic.data["opaque"] == "padlib.padding.pad_same"
    assert [r.message for r in diagnostic.related] == ["the data-dependent branch"]
    assert (diagnostic.related[0].span.file, diagnostic.related[0].span.line) == (
        str(library / "padding.py"), 5)
    (fix,) = fixes_for(text, diagnostic)
    fixed = apply_edits(text, fix.edits)
    assert fixed.startswith("# fxls: opaque padlib.padding.pad_same\n")
    (project / "net.py").write_text(fixed, encoding="utf-8")
    result = check_file(project / "net.py", env)
    assert result["diagnostics"] == []
    assert result["modules"][0]["status"] == "traced"


def test_a_base_class_without_forward_is_not_traced_and_not_an_error(results):
    text = CASES["bases.py"]
    result = results["bases.py"]
    assert result["diagnostics"] == []
    base, model = result["modules"]
    assert (base["status"], base["reason"]) == (
        "skipped", "it has no forward of its own (a base class): nothing to trace")
    assert model["status"] == "traced"
    assert agrees_with_torch_fx(result, text, "Model", torch.randn(2, 4)) == "agrees"


def test_both_modes_say_where_train_and_eval_graphs_part(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.fxls]\ntrace_mode = "both"\n')
    path = tmp_path / "bn_act.py"
    text = CASES["bn_act.py"]
    path.write_text(text, encoding="utf-8")
    result = check_file(path)
    (found,) = result["diagnostics"]
    assert found["code"] == "FX016"
    assert ranges(result, "FX016") == [
        lsp_range(text, "F.dropout(x, self.drop_rate, self.training)")]
    assert "train mode records `torch.nn.functional.dropout`" in found["message"]
    assert result["modules"][0]["nodes"] == 4  # the eval graph: x, bn, relu, output


def test_writes_into_a_tensor_made_in_forward_are_not_dead_code(results):
    text = CASES["stats.py"]
    result = results["stats.py"]
    # the zeros are baked into the graph as a constant (FX012): that is the one problem
    assert sorted({d["code"] for d in result["diagnostics"]}) == ["FX012"]
    assert agrees_with_torch_fx(result, text, "Stats", torch.randn(4, 3, 8)) == "agrees"


def test_a_graph_that_raises_where_eager_runs_is_an_error(results):
    text = CASES["dense.py"]
    result = results["dense.py"]
    (found,) = result["diagnostics"]
    assert found["code"] == "FX014" and found["severity"] == "error"
    assert ranges(result, "FX014") == [lsp_range(text, "DenseLayer")]
    assert "raises" in found["message"] and "its eager forward accepts" in found["message"]
    assert agrees_with_torch_fx(result, text, "DenseLayer", torch.randn(2, 8)) == "wrong"


def test_an_optional_argument_tested_against_none_is_frozen_into_the_graph(results):
    text = CASES["rope.py"]
    result = results["rope.py"]
    (found,) = result["diagnostics"]
    assert found["code"] == "FX014"
    assert ranges(result, "FX014") == [lsp_range(text, "RopeAttention")]
    assert "'NoneType' object has no attribute 'chunk'" in found["message"]
    assert agrees_with_torch_fx(result, text, "RopeAttention", torch.randn(2, 8)) == "wrong"


def test_work_on_an_argument_left_at_none_is_not_dead_code(results):
    text = CASES["cached.py"]
    result = results["cached.py"]
    # the graph calls `float` on the None it is given (FX014); that call is no dead tensor work
    assert [d["code"] for d in result["diagnostics"]] == ["FX014"]
    assert agrees_with_torch_fx(result, text, "Cached", torch.randn(2, 8)) == "wrong"
