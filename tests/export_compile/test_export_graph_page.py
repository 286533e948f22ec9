"""``fxls graph FILE::Class --target export|compile`` (issue 35): the graph torch's own tier
made, drawn as the FX graph is. Export's program of a real model from the zoo (Hugging Face
BERT behind a data-dependent branch: export fails, draft_export's program is shown) grouped
by ``nn_module_stack`` with the modules' classes, the failure on the nodes of its line, a
click -> the user's line, in headless Chromium; compared with torch's own draft of the same
class (kept by tests/torch_answers.py). (Dynamo's subgraphs, one group each, are checked in
test_export_hover.py, on that module's server.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.graph_models import BERT_BRANCHED as BERT
from fxls.graph_view.module_graph import graph_page
from tests.graph_view.browser import EXTENSION, browser  # noqa: F401
from tests.graph_view.pages import NO_TRANSFORMERS, NO_ZOO_REASON, zoo_env
from tests.torch_answers import torch_answer

DRIVER = Path(__file__).with_name("export_page_browser.cjs")


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def _graph(folder: Path, name: str, target: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", name, "--target", target,
                           "--format", "json", "--timeout", "300"], capture_output=True,
                          text=True, timeout=600, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


#: torch's own draft of the file's BertClassifier, in a plain process (kept by
#: tests/torch_answers.py for the same torch, zoo and file): its node count, each ATen
#: target's count
_DRAFT_IN_TORCH = """
import json, sys
from collections import Counter
import torch
namespace = {"__name__": "bert"}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec"), namespace)
model = namespace["BertClassifier"]().eval()
program = torch.export.draft_export(model, (torch.randint(0, 500, (2, 16)),))
nodes = list(program.graph_module.graph.nodes)
aten = Counter(str(n.target) for n in nodes if str(n.target).startswith("aten."))
print(json.dumps({"nodes": len(nodes), "aten": aten}))
"""


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    if NO_TRANSFORMERS:
        pytest.skip(NO_ZOO_REASON)
    folder = tmp_path_factory.mktemp("bert-export")
    (folder / "bert.py").write_text(BERT, encoding="utf-8")
    return folder / "bert.py", _graph(folder, "bert.py::BertClassifier", "export", zoo_env())


def test_the_drafted_program_is_torchs_grouped_by_module_with_classes(
        bert: tuple[Path, dict[str, Any]]) -> None:
    path, document = bert
    answer = torch_answer([sys.executable, "-c", _DRAFT_IN_TORCH, str(path)], [path],
                          cwd=path.parent, env=zoo_env(), timeout=600)
    drafted = json.loads(answer.strip().splitlines()[-1])
    assert len(document["nodes"]) == drafted["nodes"]
    assert Counter(node["target"] for node in document["nodes"]
                   if node["target"].startswith("aten.")) == Counter(drafted["aten"])
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
