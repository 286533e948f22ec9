"""The graph page reads well (issue 36: long names, clutter): after "Expand all" no text of
one item is drawn over another's (names fitted to their boxes, edge labels placed where they
cover nothing) on a Hugging Face BERT and the 5,000-node model, and shape bookkeeping
(`x.shape`, `getitem` of sizes, `eq`, `_assert`) is folded into the node that consumes it
on timm's ViT, shown again by the "shape ops" toggle and still found by search. Each page is
made once and driven once in headless Chromium (module-scoped); the tests read what the
steps saw."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.graph_models import model_source
from tests.graph_view.browser import browser, drive_steps  # noqa: F401

ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"

Box = dict[str, Any]

BERT = """\
import torch
from torch import nn
from transformers import BertConfig, BertModel


class BertClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64,
                                         num_attention_heads=2, intermediate_size=128,
                                         vocab_size=500), add_pooling_layer=False)
        self.head = nn.Linear(64, 2)

    def forward(self, x):  # fxls: args (torch.randint(0, 500, (2, 16)),)
        return self.head(self.bert(x).last_hidden_state)
"""

VIT = """\
import timm
import torch
from torch import nn


class Vit(nn.Module):
    # fxls: args (torch.randn(1, 3, 224, 224),)
    def __init__(self):
        super().__init__()
        self.vit = timm.create_model("vit_base_patch16_224", pretrained=False)

    def forward(self, x):
        return self.vit(x)
"""

#: every text drawn on the graph; the two lines of text of a node (its problem badge sits
#: on its corner) and its box
TEXTS = "#graph svg text"
NODE_TEXTS = "#graph g.node text.t1, #graph g.node text.t2"
NODE_BOXES = "#graph g.node > rect"


def _page(folder: Path, source: str, target: str, zoo: bool = False) -> Path:
    name = target.split("::")[0]
    (folder / name).write_text(source, encoding="utf-8")
    env = dict(os.environ)
    if zoo:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ZOO_SITE), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-m", "fxls", "graph", target, "--format", "html"],
                          capture_output=True, text=True, timeout=600, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    page = folder / Path(name).with_suffix(".html")
    page.write_text(done.stdout, encoding="utf-8")
    return page


def _looks(ids: list[str]) -> list[dict[str, Any]]:
    """Steps that expand everything, then at zoom 1 centre each of `ids` in turn and read
    the text and node boxes drawn around it (the view draws a screen's worth around the
    window: a few places cover a whole model)."""
    steps: list[dict[str, Any]] = [{"click": "#fx-expand-all"},
                                   {"eval": "view.setTransform({k: 1, tx: 0, ty: 0})", "as": "_"}]
    for i, node in enumerate(ids):
        steps += [{"eval": f"view.centerOnId('n:{node}')", "as": f"centred{i}"},
                  {"boxes": TEXTS, "as": f"texts{i}"},
                  {"boxes": NODE_TEXTS, "as": f"names{i}"},
                  {"boxes": NODE_BOXES, "as": f"nodes{i}"}]
    return steps


def _overlaps(texts: list[Box]) -> list[tuple[str, str]]:
    """Pairs of texts of different items (nodes, groups, edge labels) drawn over each other."""
    shown = [t for t in texts if t["width"] > 0 and t["height"] > 0]
    found = []
    for i, a in enumerate(shown):
        for b in shown[i + 1:]:
            if a["id"] is not None and a["id"] == b["id"]:
                continue
            if _overlap(a, b):
                found.append((f"{a['id']}: {a['text']}", f"{b['id']}: {b['text']}"))
    return found


def _outside_their_box(texts: list[Box], nodes: list[Box]) -> list[str]:
    """Node texts that run past their node's box."""
    boxes = {n["id"]: n for n in nodes}

    def fits(text: Box) -> bool:
        box = boxes[text["id"]]
        return box["x"] - 0.5 <= text["x"] and \
            text["x"] + text["width"] <= box["x"] + box["width"] + 0.5

    return [f"{t['id']}: {t['text']}" for t in texts
            if t["id"] in boxes and t["width"] > 0 and not fits(t)]


def _labels_on_nodes(texts: list[Box], nodes: list[Box]) -> list[tuple[str, str]]:
    """Edge labels (texts of no item) drawn over a node's box."""
    return [(t["text"], n["id"]) for t in texts if t["id"] is None and t["width"] > 0
            for n in nodes if _overlap(t, n)]


def _overlap(a: Box, b: Box) -> bool:
    return (a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5
            and a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5)


def _check_every_look(run: dict[str, Any], looks: int) -> set[str]:
    """Asserts that no look saw texts over each other or past their box, or edge labels on
    nodes; the nodes seen."""
    seen: set[str] = set()
    for i in range(looks):
        assert run[f"centred{i}"] is True
        texts, nodes = run[f"texts{i}"], run[f"nodes{i}"]
        assert len(nodes) > 10, "drawn at a zoom where text is shown"
        assert _overlaps(texts) == []
        assert _outside_their_box(run[f"names{i}"], nodes) == []
        assert _labels_on_nodes(texts, nodes) == []
        seen |= {n["id"] for n in nodes}
    return seen


# -- Hugging Face BERT, every module open ------------------------------------------------------

#: how every open group's frame is painted: its fill (under the edges) and its outline
FRAME_PAINT = """[...new Set([...document.querySelectorAll('#graph .frame-fill')].map((e) => {
  const s = getComputedStyle(e);
  return `${s.fill} ${s.fillOpacity} ${s.opacity}`;
}))].concat([...new Set([...document.querySelectorAll('#graph g.frame > rect')].map(
  (e) => getComputedStyle(e).fill))])"""

BERT_LOOKS = ["bert_embeddings", "bert_encoder_layer_0_attention_self_value",
              "bert_encoder_layer_0_output_dense", "bert_encoder_layer_1_attention_self_value",
              "bert_encoder_layer_1_output_layer_norm", "head"]


@pytest.fixture(scope="module")
def bert_run(browser: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: F811
    if not (ZOO_SITE / "transformers").is_dir():
        pytest.skip("model zoo not installed (scripts/install_model_zoo.py)")
    folder = tmp_path_factory.mktemp("bert")
    page = _page(folder, BERT, "bert.py::BertClassifier", zoo=True)
    return drive_steps(page, [
        *_looks(BERT_LOOKS),
        {"eval": "view.shown().nodes", "as": "shown"},
        {"eval": FRAME_PAINT, "as": "framePaint"},
        {"eval": "view.centerOnId('n:bert_encoder_layer_0_attention_self_value')", "as": "_"},
        {"boxes": "#graph g.node[data-id='n:bert_encoder_layer_0_attention_self_value'] text",
         "as": "value"},
        {"eval": "document.querySelector(\"#graph g.node[data-id="
                 "'n:bert_encoder_layer_0_attention_self_value'] title\").textContent",
         "as": "valueTip"},
        {"screenshot": str(folder / "graph-bert.png")},
    ])


def test_no_text_is_drawn_over_another_on_bert_expanded(bert_run: dict[str, Any]) -> None:
    seen = _check_every_look(bert_run, len(BERT_LOOKS))
    assert seen == {f"n:{name}" for name in bert_run["shown"]}, "the looks covered the model"


def test_frames_nested_five_deep_are_as_light_as_one(bert_run: dict[str, Any]) -> None:
    # `bert > encoder > layer > layer.0 > attention > self`: one opaque light fill, never
    # stacked translucent layers, and outlines that do not hide what is inside
    assert bert_run["framePaint"] == ["rgb(243, 246, 249) 1 1", "rgba(0, 0, 0, 0)"]


def test_a_long_name_is_shortened_to_its_box_and_whole_in_its_tooltip(
        bert_run: dict[str, Any]) -> None:
    # inside the frame of `bert.encoder.layer.0.attention.self`, the Linear `value`
    assert [t["text"] for t in bert_run["value"]] == ["value", "Linear"]
    assert bert_run["valueTip"].splitlines()[0] == (
        "bert_encoder_layer_0_attention_self_value: call_module "
        "bert.encoder.layer.0.attention.self.value [2, 16, 64]")


# -- the 5,000-node model, every module open -------------------------------------------------

BIG_LOOKS = ["stages_0_blocks_0_attn_qkv", "stages_3_blocks_5_attn_qkv",
             "stages_9_blocks_27_mlp_fc2", "head"]


@pytest.mark.usefixtures("browser")
def test_no_text_is_drawn_over_another_on_the_5000_node_model_expanded(
        tmp_path: Path) -> None:
    page = _page(tmp_path, model_source(10, 28), "big.py::Big")
    run = drive_steps(page, _looks(BIG_LOOKS))
    seen = _check_every_look(run, len(BIG_LOOKS))
    assert {f"n:{name}" for name in BIG_LOOKS} <= seen
    labels = [t for i in range(len(BIG_LOOKS)) for t in run[f"texts{i}"] if t["id"] is None]
    assert len(labels) > 50, "edge labels are drawn, beside their edges"


# -- timm ViT: shape bookkeeping folded ----------------------------------------------------

#: in timm's Attention, `B, N, C = x.shape` feeds `reshape` (the qkv projection's)
RESHAPE = "#graph g.node[data-id='n:reshape']"


@pytest.fixture(scope="module")
def vit_run(browser: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: F811
    if not (ZOO_SITE / "timm").is_dir():
        pytest.skip("model zoo not installed (scripts/install_model_zoo.py)")
    folder = tmp_path_factory.mktemp("vit")
    page = _page(folder, VIT, "vit.py::Vit", zoo=True)
    return drive_steps(page, [
        # as it opens: the top-level modules closed
        {"eval": "view.setTransform({k: 1, tx: 0, ty: 0})", "as": "_"},
        {"boxes": "#graph g.group.collapsed text", "as": "closedTexts"},
        {"boxes": "#graph g.group.collapsed > rect", "as": "closedBoxes"},
        {"click": "#fx-expand-all"},
        {"eval": "[view.model.nodes.size, view.shown().nodes.length]", "as": "folded"},
        {"eval": "view.centerOnId('n:vit_blocks_0_attn_qkv')", "as": "_"},
        {"boxes": f"{RESHAPE} text", "as": "reshape"},
        {"eval": f"document.querySelector(\"{RESHAPE} title\").textContent", "as": "reshapeTip"},
        {"screenshot": str(folder / "graph-vit.png")},
        # search finds a folded node: it selects it, and its consumer is marked
        {"fill": "#fx-search", "text": "getitem_7"},
        {"press": "#fx-search", "key": "Enter"},
        {"eval": "document.querySelector('#fx-selected').textContent", "as": "selected"},
        {"boxes": "#graph g.selected", "as": "marked"},
        {"click": "#fx-bookkeeping"},
        {"eval": "[view.model.nodes.size, view.shown().nodes.length]", "as": "shown"},
        {"boxes": "#graph g.node[data-id='n:getitem_7']", "as": "ownNode"},
    ])


def test_closed_groups_titles_fit_their_boxes(vit_run: dict[str, Any]) -> None:
    titles = [t["text"] for t in vit_run["closedTexts"]]
    assert "▸ blocks : Sequential" in titles and "396 nodes" in titles
    assert _outside_their_box(vit_run["closedTexts"], vit_run["closedBoxes"]) == []


def test_vit_shape_bookkeeping_is_folded_into_its_consumers(vit_run: dict[str, Any]) -> None:
    # 14 `x.shape`, their 41 `getitem`s, the patch embedding's 2 `eq` and 2 `_assert`
    total, drawn = vit_run["folded"]
    assert (total, drawn) == (476, 476 - 59)
    # the first block's qkv reshape reads `B, N, C = x.shape` (4 nodes): its box says so
    # and its tooltip lists them
    assert [t["text"] for t in vit_run["reshape"]] == ["reshape", "reshape · +4"]
    assert vit_run["reshapeTip"].splitlines()[1:] == [
        "shape bookkeeping folded in (4):",
        "  getattr_3 = getattr(%layer_norm, shape)",
        "  getitem_5 = getitem(%getattr_3, 0)",
        "  getitem_6 = getitem(%getattr_3, 1)",
        "  getitem_7 = getitem(%getattr_3, 2)",
    ]


def test_search_finds_a_folded_node_and_the_toggle_shows_every_node(
        vit_run: dict[str, Any]) -> None:
    assert vit_run["selected"] == "getitem_7"
    assert [m["id"] for m in vit_run["marked"]] == ["n:reshape"], "drawn on its consumer"
    assert vit_run["shown"] == [476, 476]
    assert len(vit_run["ownNode"]) == 1
