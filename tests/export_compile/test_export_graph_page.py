"""``fxls graph FILE::Class --target export|compile`` (issue 35): the graph torch's own tier
made, drawn as the FX graph is. Export's program of a real model from the zoo (Hugging Face
BERT behind a data-dependent branch: export fails, draft_export's program is shown) grouped
by ``nn_module_stack`` with the modules' classes, the failure on the nodes of its line, a
click -> the user's line, in headless Chromium; dynamo's subgraphs one group each, every
break drawn where its subgraph ended. Compared with torch run here on the same classes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
import torch._dynamo

from fxls.graph_view.module_graph import graph_page
from tests.graph_view.test_graph_page import EXTENSION, ZOO_SITE, browser  # noqa: F401

BERT = """\
import torch
from torch import nn
from transformers import BertConfig, BertModel


class BertClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64,
                                             num_attention_heads=2, intermediate_size=128,
                                             vocab_size=500), add_pooling_layer=False)
        self.head = nn.Linear(64, 2)

    def forward(self, x):  # fxls: args (torch.randint(0, 500, (2, 16)),)
        feats = self.backbone(x).last_hidden_state
        if feats.mean() > 0:
            feats = feats * 2
        return self.head(feats)
"""
BREAKS = """\
import torch
from torch import nn


class Printing(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        x = self.lin(x) + 1
        print("shape", x.shape)
        x = x.relu()
        if x.sum() > 0:
            x = x * 2
        return x
"""
DRIVER = Path(__file__).with_name("export_page_browser.cjs")


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def _graph(folder: Path, name: str, target: str, env: dict[str, str] | None = None
           ) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", name, "--target", target,
                           "--format", "json", "--timeout", "300"], capture_output=True,
                          text=True, timeout=600, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _load(path: Path, name: str) -> Any:
    namespace: dict[str, Any] = {"__name__": path.stem}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace[name]


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    if not (ZOO_SITE / "transformers").is_dir():
        pytest.skip("model zoo not installed (scripts/install_model_zoo.py)")
    folder = tmp_path_factory.mktemp("bert-export")
    (folder / "bert.py").write_text(BERT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH")) if p)}
    return folder / "bert.py", _graph(folder, "bert.py::BertClassifier", "export", env)


def test_the_drafted_program_is_torchs_grouped_by_module_with_classes(
        bert: tuple[Path, dict[str, Any]]) -> None:
    path, document = bert
    sys.path.insert(0, str(ZOO_SITE))
    try:
        model = _load(path, "BertClassifier")().eval()
        program = torch.export.draft_export(model, (torch.randint(0, 500, (2, 16)),))
    finally:
        sys.path.remove(str(ZOO_SITE))
    torch_nodes = list(program.graph_module.graph.nodes)
    assert len(document["nodes"]) == len(torch_nodes)
    assert Counter(node["target"] for node in document["nodes"]
                   if node["target"].startswith("aten.")) == Counter(
        str(node.target) for node in torch_nodes if str(node.target).startswith("aten."))
    assert document["title"] == "exported program (ATen)"
    assert document["verdict"] == "export failed: 1 problem"
    types = {group["path"]: group["type"] for group in document["groups"]}
    assert types["backbone"] == "transformers.models.bert.modeling_bert.BertModel"
    assert types["backbone.encoder.layer.1.attention"] == \
        "transformers.models.bert.modeling_bert.BertAttention"
    # every node of the backbone is at the user's line that called it
    called = _line(BERT, "self.backbone(x)")
    assert {node["line"] for node in document["nodes"] if node["op"] == "call_function"
            and (node["module_path"] or "").startswith("backbone")} == {called}


def test_the_page_groups_marks_the_failure_and_leads_to_its_line(
        browser: None, bert: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:  # noqa: F811
    path, document = bert
    page, shot = tmp_path / "bert.html", tmp_path / "bert-export.png"
    page.write_text(graph_page(document), encoding="utf-8")
    (failure,) = document["problems"]
    branch = _line(BERT, "if feats.mean() > 0:")
    assert (failure["code"], failure["span"]["line"]) == ("FX201", branch)
    assert "gt" in failure["nodes"]
    done = subprocess.run(["node", str(DRIVER), str(page), "--click", "gt", "--screenshot",
                           str(shot)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NODE_PATH": str(EXTENSION / "node_modules")})
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["errors"] == [] and result["requests"] == []
    assert result["title"] == "BertClassifier: exported program (ATen)"
    # the one module that wraps the rest opens: its parts are shown, with their classes
    assert result["groups"] == [
        {"id": f"g:backbone.{name}", "problem": False,
         "title": f"backbone.{name} (transformers.models.bert.modeling_bert.{cls}): click to "
                  "expand"} for name, cls in (("embeddings", "BertEmbeddings"),
                                              ("encoder", "BertEncoder"))]
    assert result["banner"].startswith("Graph drafted. 1 problem marked in red: FX201 bert.py:16")
    assert result["click"]["location"] == f"{path}:{branch}"
    assert result["click"]["problem"] is True
    assert shot.stat().st_size > 10_000


def test_compile_shows_each_subgraph_and_the_break_that_ended_it(tmp_path: Path) -> None:
    (tmp_path / "breaks.py").write_text(BREAKS, encoding="utf-8")
    document = _graph(tmp_path, "breaks.py::Printing", "compile")
    explained = torch._dynamo.explain(_load(tmp_path / "breaks.py", "Printing")())(
        torch.randn(4, 8))
    groups = {group["path"]: group["type"] for group in document["groups"]}
    count = explained.graph_count
    assert [path for path in groups if path.startswith("subgraph_") and "." not in path] == [
        f"subgraph_{number}" for number in range(1, count + 1)]
    assert groups["subgraph_1.lin"] == "torch.nn.modules.linear.Linear"
    for number, graph in enumerate(explained.graphs, 1):  # torch's nodes, in its order
        ours = [node["target"].rsplit(".", 1)[-1] for node in document["nodes"]
                if node["name"].endswith(f"@{number}")]
        assert ours == [node.target if isinstance(node.target, str) else node.target.__name__
                        for node in graph.graph.nodes]
    break_lines = [reason.user_stack[-1].lineno for reason in explained.break_reasons]
    marked = [(problem["span"]["line"], problem["nodes"]) for problem in document["problems"]]
    assert marked == [(line, [f"output@{number}"])
                      for number, line in enumerate(break_lines, 1)]
    outputs = {node["name"]: node for node in document["nodes"] if node["op"] == "output"}
    assert all(outputs[f"output@{number}"]["users"][-1].endswith(f"@{number + 1}")
               and outputs[f"output@{number}"]["line"] == break_lines[number - 1]
               for number in range(1, count))
