"""After the replay of a graph described as data, the model's own export or dynamo run
misses nothing in torch's fake-tensor cache (torch's own hit and miss counts are the
reference); what the replay reads from a job is checked, and anything else is refused as
``Undescribable``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

from fxls.analysis.torch_warmth import code_caches, graph_data
from fxls.analysis.torch_warmth.graph_data import Undescribable, describe, rebuild
from fxls.analysis.torch_warmth.replay import warm_from

REPO = Path(__file__).resolve().parents[2]


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 12)
        self.qkv = nn.Linear(12, 36)
        self.norm = nn.LayerNorm(12)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        q, k, v = self.qkv(x).view(2, 5, 3, 12).unbind(2)
        weights = torch.softmax(q @ k.transpose(-1, -2) / 12 ** 0.5, dim=-1)
        return self.norm(x + weights @ v)[:, 0]


class ConvBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1)


class Positions(nn.Module):
    """GPT-2's way: positions made with ``arange`` (a factory, in dynamo's graph), a
    dtype change (``_assert_tensor_metadata`` and ``_to_copy`` in export's)."""

    def __init__(self) -> None:
        super().__init__()
        self.positions = nn.Embedding(16, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        where = torch.arange(x.shape[1], device=x.device)
        return x.to(torch.float32) + self.positions(where)


CASES = {
    "attention": (Attention, (torch.randint(0, 50, (2, 5)),)),
    "conv": (ConvBlock, (torch.randn(2, 3, 9, 9),)),
    "positions": (Positions, (torch.randn(2, 5, 6, dtype=torch.float64),)),
}


def _misses_of(run: object) -> tuple[int, int]:
    """torch's own count of fake-tensor cache hits and misses while ``run`` runs."""
    FakeTensorMode.cache_hits = FakeTensorMode.cache_misses = 0
    run()  # type: ignore[operator]
    return FakeTensorMode.cache_hits, FakeTensorMode.cache_misses


def _export_kinds(program: torch.export.ExportedProgram) -> dict[str, str]:
    from torch.export.graph_signature import InputKind
    return {spec.arg.name: {InputKind.PARAMETER: "param", InputKind.BUFFER: "buffer"}.get(
        spec.kind, "input") for spec in program.graph_signature.input_specs}


@pytest.mark.parametrize("case", CASES)
def test_after_an_export_replayed_from_data_the_model_export_misses_nothing(case: str) -> None:
    cls, inputs = CASES[case]
    model = cls().eval()
    program = torch.export.export(model, inputs)
    data = json.loads(json.dumps(describe(program.graph_module, _export_kinds(program))))
    FakeTensorMode.cache.clear()
    assert _misses_of(lambda: torch.export.export(model, inputs))[1] > 0  # cold: it would
    FakeTensorMode.cache.clear()
    torch.export.export(*rebuild(data, zeroed=False))
    hits, misses = _misses_of(lambda: torch.export.export(model, inputs))
    assert hits > 0 and misses == 0


@pytest.mark.parametrize("case", CASES)
def test_after_a_dynamo_run_replayed_from_data_the_model_run_misses_nothing(case: str) -> None:
    cls, inputs = CASES[case]
    model = cls().eval()
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(*inputs)
    data = json.loads(json.dumps([describe(gm) for gm in explained.graphs]))
    FakeTensorMode.cache.clear()
    torch._dynamo.reset()
    for nodes in data:
        module, module_inputs = rebuild(nodes)
        torch._dynamo.explain(module)(*module_inputs)
    torch._dynamo.reset()
    hits, misses = _misses_of(lambda: torch._dynamo.explain(model)(*inputs))
    assert hits > 0 and misses == 0


def _graph() -> list[dict[str, object]]:
    program = torch.export.export(nn.Linear(4, 3), (torch.randn(2, 4),))
    return describe(program.graph_module, _export_kinds(program))


@pytest.mark.parametrize("change", [
    "ops:myns.secret.default", "os:system", "torch:__import__", "operator:__class__",
    "ops:aten.linear.__call__", "torch.nn.functional:Module", "torch:load", "torch:save",
    "torch:compile", "torch:set_num_threads", "operator:attrgetter", "operator:methodcaller",
    "operator:call", "operator:setitem", "torch:randn", "torch:manual_seed",
])
def test_a_function_that_is_not_a_tensor_operation_is_refused(change: str) -> None:
    nodes = _graph()
    call = next(node for node in nodes if node["op"] == "function")
    call["target"] = change
    with pytest.raises(Undescribable):
        rebuild(nodes)


@pytest.mark.parametrize("damage", [
    lambda nodes: nodes[0].update(shape=[1 << 20, 1 << 20], stride=[1 << 20, 1]),
    lambda nodes: nodes[0].update(shape=[True, 4]),
    lambda nodes: nodes[0].update(dtype="object"),
    lambda nodes: nodes[-1].update(args={"tuple": [{"node": 99}]}),
    lambda nodes: nodes[-1].update(args={"tuple": [{"node": len(nodes) - 1}]}),
    lambda nodes: nodes.append({"op": "get_attr", "target": "x"}),
    lambda nodes: nodes.insert(0, {"op": "method", "target": "__reduce__", "args": {"tuple": []},
                                   "kwargs": {"dict": {}}}),
    lambda nodes: nodes.__setitem__(0, "not a node"),
    lambda nodes: nodes.extend([nodes[0]] * graph_data.MAX_NODES),
])
def test_damaged_data_is_refused(damage: object) -> None:
    nodes = _graph()
    damage(nodes)  # type: ignore[operator]
    with pytest.raises(Undescribable):
        rebuild(nodes)


@pytest.mark.parametrize("method", ["tofile", "__reduce_ex__", "register_hook", "apply_"])
def test_a_method_that_is_not_a_tensor_operation_is_refused(method: str) -> None:
    nodes = _graph()
    output = nodes.pop()
    nodes.append({"op": "method", "target": method, "args": {"tuple": [{"node": 0}]},
                  "kwargs": {"dict": {}}})
    nodes.append(output)
    with pytest.raises(Undescribable):
        rebuild(nodes)


def test_what_no_replay_can_use_is_described_as_nothing() -> None:
    gm = torch.fx.symbolic_trace(nn.Linear(4, 3))  # a call_module node, no metadata
    with pytest.raises(Undescribable):
        describe(gm)


def test_warmth_that_is_not_data_of_ours_is_ignored() -> None:
    for value in (None, [], {"graphs": "x"}, {"graphs": [{"tier": "export", "nodes": [1]}]},
                  {"graphs": [], "code": {"files": ["/etc/passwd"], "functions": [[1, 2]]}}):
        warm_from(value)


def test_dynamo_code_caches_are_warmed_in_another_process_for_loaded_modules_only(
        tmp_path: Path) -> None:
    """What one process's dynamo run read, named as data, warms a fresh process: the files and
    functions of modules it has loaded, never a file it has not."""
    from torch._dynamo import bytecode_transformation, funcname_cache
    funcname_cache.clearcache()  # what earlier tests' runs left
    bytecode_transformation._cached_cleaned_instructions.cache_clear()
    torch._dynamo.reset()
    names = code_caches.CodeNames()
    with code_caches.recording(names):
        torch._dynamo.explain(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))(torch.randn(2, 4))
    linear = torch.nn.modules.linear.__file__
    assert linear in names.files
    assert any(path == linear and name == "forward" for path, _, name, _ in names.functions)
    stranger = tmp_path / "stranger.py"
    stranger.write_text("def forward(x):\n    return x\n")
    data = names.to_json()
    data["files"].append(str(stranger))
    data["functions"].append([str(stranger), 1, "forward", False])
    script = textwrap.dedent("""
        import json, sys
        import torch, torch._dynamo
        from torch._dynamo import bytecode_transformation, funcname_cache
        from fxls.analysis.torch_warmth import code_caches
        warmed = code_caches.warm(json.loads(sys.argv[1]))
        cleaned = bytecode_transformation._cached_cleaned_instructions.cache_info().currsize
        print(json.dumps({"warmed": warmed, "files": sorted(funcname_cache.cache),
                          "cleaned": cleaned}))
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(data)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["warmed"] > 0 and found["cleaned"] >= found["warmed"]
    assert linear in found["files"] and str(stranger) not in found["files"]


def test_a_replay_leaves_torch_random_generator_as_it_was() -> None:
    """A replayed dropout draws numbers; the job that follows must draw what it would have."""
    torch._dynamo.reset()
    explained = torch._dynamo.explain(nn.Dropout(0.5).train())(torch.randn(4, 8))
    value = {"graphs": [{"tier": "compile", "nodes": describe(gm)} for gm in explained.graphs]}
    before = torch.random.get_rng_state()
    warm_from(json.loads(json.dumps(value)))
    assert torch.equal(torch.random.get_rng_state(), before)


ZOO_SITE = Path("~/.cache/fxls-model-zoo/site").expanduser()


@pytest.mark.skipif(not (ZOO_SITE / "tqdm").is_dir(),
                    reason="tqdm comes with the model zoo (scripts/install_model_zoo.py)")
def test_a_replay_leaves_no_thread_behind_where_tqdm_is_installed() -> None:
    """dynamo logs its steps on a tqdm bar, whose monitor is a thread; a job process that has
    a second thread cannot be confined for its job (it crashed, FX102, on the next save)."""
    torch._dynamo.reset()
    explained = torch._dynamo.explain(nn.Linear(4, 4))(torch.randn(2, 4))
    program = torch.export.export(nn.Linear(4, 4), (torch.randn(2, 4),))
    value = {"graphs": [{"tier": "export", "nodes": describe(program.graph_module,
                                                             _export_kinds(program))},
                        *({"tier": "compile", "nodes": describe(gm)} for gm in explained.graphs)]}
    script = textwrap.dedent("""
        import json, sys, threading
        from fxls.analysis.torch_warmth.replay import warm_from
        before = threading.active_count()
        warm_from(json.loads(sys.argv[1]))
        print(before, threading.active_count())
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(value)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "PYTHONPATH": f"{REPO}:{ZOO_SITE}"})
    assert done.stdout.split() == ["1", "1"]
