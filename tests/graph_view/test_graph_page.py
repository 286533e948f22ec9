"""``fxls graph --format json|table|html``: the grouping by module path, each node's source,
the problems on the graph, and the self-contained graph page, driven in headless Chromium
(load, expand, expand all, search, click -> file:line) on a generated 5,000-node model and,
when the model zoo is installed, on timm's vit_base_patch16_224."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.graph_view.browser import EXTENSION, browser, drive, node_modules  # noqa: F401
from tests.graph_view.pages import (
    BIG,
    NESTED,
    NO_TIMM,
    NO_ZOO_REASON,
    big_page,
    nested_json,
    vit_page,
)

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "fxls" / "graph_page" / "graph.js"


def _fxls(folder: Path, *arguments: str, env: dict[str, str] | None = None,
          timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fxls", *arguments], capture_output=True,
                          text=True, timeout=timeout, cwd=folder, env=env)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nested")
    (folder / "net.py").write_text(NESTED, encoding="utf-8")
    return folder


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


def test_json_groups_nodes_by_module_path_with_their_file_and_line(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    # the CLI's output on net.py, shared with test_graph_orientation's page of it
    output = nested_json(tmp_path_factory)
    document = json.loads(output.read_text(encoding="utf-8"))
    nodes = {n["name"]: n for n in document["nodes"]}
    relu = nodes["blocks_0_relu"] if "blocks_0_relu" in nodes else nodes["relu"]
    assert relu["module_path"] == "blocks.0"
    assert relu["file"] == str(output.parent / "net.py")
    assert relu["line"] == _line(NESTED, "return self.fc(x).relu() + x")
    assert nodes["blocks_1_fc"]["module_path"] == "blocks.1.fc"
    groups = {g["path"]: g for g in document["groups"]}
    assert groups["blocks"]["parent"] == "" and groups["blocks.1"]["parent"] == "blocks"
    assert groups["blocks"]["nodes"] == 6
    assert groups["blocks.0.fc"]["type"] == "torch.nn.modules.linear.Linear"
    # a submodule traced through has its class too (from the nodes' module stacks)
    assert groups["blocks.1"]["type"] == "net.Block"
    assert groups["blocks"]["type"] == "torch.nn.modules.container.Sequential"
    # the partial graph's problem is located at the nodes tracing went wrong at
    assert document["status"] == "partial"
    (problem,) = [p for p in document["problems"] if p["code"] == "FX001"]
    assert problem["span"]["line"] == _line(NESTED, "if h.sum() > 0:")
    assert {nodes[n]["target"] for n in problem["nodes"]} == {"sum", "operator.gt"}


def test_table_locations_name_the_file(nested: Path) -> None:
    done = _fxls(nested, "graph", "net.py::Net", "--format", "table")
    assert done.returncode == 0, done.stderr
    header, _rule, *rows = done.stdout.splitlines()
    assert header.split()[-1] == "location"
    line = _line(NESTED, "return self.head(h)")
    assert any(row.startswith("head ") and row.endswith(f"net.py:{line}") for row in rows), rows


def test_html_is_one_self_contained_page(nested: Path) -> None:
    done = _fxls(nested, "graph", "net.py::Net", "--format", "html")
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page), "nothing loaded"
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy and "default-src &#x27;none&#x27;" in policy.group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(scripts) == 1, "one script: the graph view with its layout library"
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert f"sha256-{digest}" in policy.group(1), "the policy allows exactly that script"
    data = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                     page, re.S)
    assert data and json.loads(data.group(1))["name"] == "Net"


def test_the_committed_bundle_is_built_from_the_current_sources(tmp_path: Path) -> None:
    """fxls/graph_page/graph.js is what `npm run build:page` makes of editors/vscode/src."""
    assert BUNDLE.stat().st_size > 20_000
    assert "fxls-graph-data" in BUNDLE.read_text(encoding="utf-8")
    node_modules()
    fresh = tmp_path / "graph.js"
    done = subprocess.run(["node", "scripts/build.mjs", "--page"], cwd=EXTENSION, timeout=300,
                          capture_output=True, text=True,
                          env={**os.environ, "FXLS_PAGE_BUNDLE": str(fresh)})
    assert done.returncode == 0, done.stderr
    assert fresh.read_bytes() == BUNDLE.read_bytes(), (
        "fxls/graph_page/graph.js is stale: run `cd editors/vscode && npm run build:page`")


# -- in a real browser ----------------------------------------------------------------------

@pytest.mark.usefixtures("browser")
def test_a_5000_node_page_opens_collapsed_expands_searches_and_shows_sources(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    page = big_page(tmp_path_factory)
    shot = tmp_path / "big.png"
    result = drive(page, "--expand-depth", "4", "--search", "softmax_100",
                   "--click", "stages_3_blocks_5_attn_qkv", "--expand-all",
                   "--screenshot", str(shot))
    assert result["title"] == "Big"
    assert result["total"] >= 5000
    # opens collapsed to the top-level modules (`stages`, the only one, is open)
    assert result["collapsed"]["groups"] == [f"stages.{i}" for i in range(10)]
    assert set(result["collapsed"]["nodes"]) == {"x", "stem", "mean", "head", "output"}
    # expand one group, then the first group inside it, down to a block's attention
    expanded = [e["group"] for e in result["expansions"]]
    assert expanded == ["stages.0", "stages.0.blocks", "stages.0.blocks.0",
                        "stages.0.blocks.0.attn"]
    assert result["expansions"][1]["groupsAfter"] == 9 + 28
    assert result["expansions"][-1]["shownAfter"] > result["expansions"][-2]["shownAfter"]
    # a click on an open group's title closes it again
    assert result["collapse"] == {"group": "stages.0.blocks.0.attn",
                                  "shownNodes": result["expansions"][-2]["shownAfter"]}
    # search goes to the match, expanding the groups around it
    assert result["search"] == {"count": "1 of 1", "selected": "softmax_100", "matchesShown": 1}
    # a click on a node shows its file:line
    line = _line(BIG, "q, k, v = self.qkv(x).chunk(3, dim=-1)")
    assert result["click"]["location"] == f"{page.parent / 'big.py'}:{line}"
    assert result["click"]["panelSource"] == f"big.py:{line}"
    assert result["expandAll"]["shownNodes"] == result["total"]
    assert shot.stat().st_size > 10_000


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
@pytest.mark.usefixtures("browser")
def test_timm_vit_page(tmp_path_factory: pytest.TempPathFactory) -> None:
    page = vit_page(tmp_path_factory)
    result = drive(page, "--expand-depth", "3", "--search", "scaled_dot_product_attention",
                   "--click", "vit_head", "--expand-all")
    assert result["total"] > 400
    # the one module that wraps everything is open: its top-level modules are shown
    assert {"vit.patch_embed", "vit.blocks", "vit.norm"} <= set(result["collapsed"]["groups"])
    # each with its class, though `blocks` and `patch_embed` make no node of their own
    titles = {group["id"]: group["title"] for group in result["groups"]}
    assert titles["g:vit.blocks"] == \
        "vit.blocks (torch.nn.modules.container.Sequential): click to expand"
    assert titles["g:vit.patch_embed"] == \
        "vit.patch_embed (timm.layers.patch_embed.PatchEmbed): click to expand"
    assert result["expansions"][0]["group"] == result["collapsed"]["groups"][0]
    assert result["search"]["count"] == "1 of 12", "one attention per block"
    assert re.search(r"/timm/models/vision_transformer\.py:\d+$", result["click"]["location"])
    # every node but the shape bookkeeping folded into its consumers (14 `x.shape`, their 41
    # `getitem`s, 2 `eq`, 2 `_assert`: test_graph_legibility.py)
    assert result["expandAll"]["shownNodes"] == result["total"] - 59
