"""The graph page reads well (issue 36: long names, clutter): after "Expand all" no text of
one item is drawn over another's (names fitted to their boxes, edge labels placed where they
cover nothing) on a Hugging Face BERT and the 5,000-node model, and shape bookkeeping
(`x.shape`, `getitem` of sizes, `eq`, `_assert`) is folded into the node that consumes it
on timm's ViT, shown again by the "shape ops" toggle and still found by search. Each page is
made once per run (tests/graph_view/pages.py) and the pages driven one after the other in
one headless Chromium (module-scoped); the tests read what the steps saw."""

from __future__ import annotations

from typing import Any

import pytest

from tests.graph_view.browser import PageRun, browser, drive_pages  # noqa: F401
from tests.graph_view.pages import (
    NO_TIMM,
    NO_TRANSFORMERS,
    NO_ZOO_REASON,
    bert_page,
    big_page,
    vit_page,
)

Box = dict[str, Any]

#: every text drawn on the graph; the two lines of text of a node (its problem badge sits
#: on its corner) and its box
TEXTS = "#graph svg text"
NODE_TEXTS = "#graph g.node text.t1, #graph g.node text.t2"
NODE_BOXES = "#graph g.node > rect"


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


def _bert_run(factory: pytest.TempPathFactory) -> PageRun:
    folder = factory.mktemp("bert")
    return PageRun(bert_page(factory), [
        # issue 36.2: the problems raised inside transformers, on the graph at the user's line
        {"eval": "document.querySelector('#fx-banner').textContent", "as": "banner"},
        {"eval": "view.model.doc.problems.map((p) => [p.code, p.attached, p.group])",
         "as": "problems"},
        {"boxes": "#graph g.problem", "as": "problemMarks"},
        {"click": "#fx-banner a.fx-problem-link"},
        {"boxes": "#graph g.selected", "as": "problemSelected"},
        {"boxes": "#fx-group-problems li", "as": "groupProblems"},
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


@pytest.fixture(scope="module")
def bert_run(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if "bert" not in runs:
        pytest.skip(NO_ZOO_REASON)
    return runs["bert"]


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


def test_no_text_is_drawn_over_another_on_the_5000_node_model_expanded(
        runs: dict[str, dict[str, Any]]) -> None:
    run = runs["big"]
    seen = _check_every_look(run, len(BIG_LOOKS))
    assert {f"n:{name}" for name in BIG_LOOKS} <= seen
    labels = [t for i in range(len(BIG_LOOKS)) for t in run[f"texts{i}"] if t["id"] is None]
    assert len(labels) > 50, "edge labels are drawn, beside their edges"


# -- timm ViT: shape bookkeeping folded ----------------------------------------------------

#: in timm's Attention, `B, N, C = x.shape` feeds `reshape` (the qkv projection's)
RESHAPE = "#graph g.node[data-id='n:reshape']"


def _vit_run(factory: pytest.TempPathFactory) -> PageRun:
    folder = factory.mktemp("vit")
    return PageRun(vit_page(factory), [
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


@pytest.fixture(scope="module")
def vit_run(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if "vit" not in runs:
        pytest.skip(NO_ZOO_REASON)
    return runs["vit"]


# -- every page above driven in one browser ---------------------------------------------------

@pytest.fixture(scope="module")
def runs(browser: None, tmp_path_factory: pytest.TempPathFactory  # noqa: F811
         ) -> dict[str, dict[str, Any]]:
    """What each page's steps read, the pages loaded one after the other in one browser; a
    page of the model zoo's is left out (its tests skip) when the zoo is not installed."""
    pages = {"big": PageRun(big_page(tmp_path_factory), _looks(BIG_LOOKS))}
    if not NO_TRANSFORMERS:
        pages["bert"] = _bert_run(tmp_path_factory)
    if not NO_TIMM:
        pages["vit"] = _vit_run(tmp_path_factory)
    return drive_pages(pages)


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


def test_bert_problems_inside_the_library_are_marked_where_the_user_called_it(
        bert_run: dict[str, Any]) -> None:
    # symbolic tracing fails three times inside transformers, all reached from
    # `self.bert(x)`: each lands on the `bert` group, which is marked and selected
    assert bert_run["problems"] == [["FX001", "group", "bert"], ["FX002", "group", "bert"],
                                    ["FX004", "group", "bert"]]
    assert "3 problems marked in red" in bert_run["banner"]
    assert [mark["id"] for mark in bert_run["problemMarks"]] == ["g:bert"]
    assert [item["id"] for item in bert_run["problemSelected"]] == ["g:bert"]
    assert [li["text"].split()[0] for li in bert_run["groupProblems"]] == [
        "FX001", "FX002", "FX004"]
