"""Finding one's way on the graph page (issue 36: orientation, search, problems, source):
expanding a group brings it into view, Fit shows the whole graph and Fit width its width, the
overview has a column of its own that a tall graph fills, search results are grouped by
module with counts (a `/regex/` too, a bad one said), the banner counts only the problems it
marks and a click on one selects its nodes, the side panel shows the node's source lines, and
the selected node's edges are coloured. Each page has one list of steps, and the pages are
driven one after the other in one headless Chromium (module-scoped, tests/graph_view/
pages.py's pages built once per run); the tests read what those steps saw."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fxls.graph_view.module_graph import graph_page
from tests.graph_view.browser import PageRun, browser, drive_pages  # noqa: F401
from tests.graph_view.pages import (
    NESTED,
    NO_TIMM,
    NO_ZOO_REASON,
    big_page,
    nested_json,
    vit_unfused_page,
)

Box = dict[str, Any]


def _inside(box: Box, area: Box) -> bool:
    return (box["x"] >= area["x"] - 0.5 and box["y"] >= area["y"] - 0.5
            and box["x"] + box["width"] <= area["x"] + area["width"] + 0.5
            and box["y"] + box["height"] <= area["y"] + area["height"] + 0.5)


def _overlap(a: Box, b: Box) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def _line(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if fragment in line)


#: the graph's width in the overview: columns of its canvas with a node's grey in them (not
#: the blue outline of the part in view)
PAINTED_COLUMNS = """(() => {
  const c = document.querySelector('.fx-overview-map');
  const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const grey = (i) =>
    data[i + 3] === 255 && data[i] > 60 && data[i] < 180 && data[i + 2] - data[i] < 60;
  let columns = 0;
  for (let x = 0; x < c.width; x++) {
    for (let y = 0; y < c.height; y++) if (grey((y * c.width + x) * 4)) { columns++; break; }
  }
  return { columns, width: c.width, height: c.height };
})()"""


# -- the 5,000-node model ------------------------------------------------------------------

def _big_run(factory: pytest.TempPathFactory) -> PageRun:
    frame = "g.frame[data-id='g:{}'] > rect"
    return PageRun(big_page(factory), [
        {"boxes": ".fx-draw", "as": "area"},
        {"boxes": ".fx-overview-map", "as": "overview"},
        {"boxes": "g.group.collapsed[data-id='g:stages.9']", "as": "closed"},
        # the last stage, at the bottom of the view: it opens below the window's edge
        {"click": "g.group.collapsed[data-id='g:stages.9']"},
        {"boxes": frame.format("stages.9"), "as": "stage"},
        # its 28 blocks make a column taller than the window
        {"click": "g.group.collapsed[data-id='g:stages.9.blocks']"},
        {"boxes": frame.format("stages.9.blocks"), "as": "blocks"},
        {"eval": "view.transform.k", "as": "blocksZoom"},
        {"click": "#fx-expand-all"},
        {"click": "#fx-fit"},
        {"boxes": "#graph g[data-id]", "as": "fitted"},
        {"eval": "view.shown().nodes.length", "as": "total"},
        {"click": "#fx-fit-width"},
        {"boxes": "#graph g.node", "as": "across"},
        {"eval": "view.transform.k", "as": "acrossZoom"},
        {"eval": PAINTED_COLUMNS, "as": "painted"},
        {"eval": "document.querySelector('#fx-fit').title", "as": "fitTitle"},
    ])


@pytest.fixture(scope="module")
def big_run(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return runs["big"]


def test_expanding_a_group_brings_it_into_view(big_run: dict[str, Any]) -> None:
    (area,), (closed,), (stage,) = big_run["area"], big_run["closed"], big_run["stage"]
    assert _inside(closed, area)
    assert stage["y"] + stage["height"] > closed["y"] + closed["height"], "it grew downwards"
    assert _inside(stage, area), "the whole stage is in the window after the click"


def test_a_group_taller_than_the_window_opens_at_its_top_at_a_readable_zoom(
        big_run: dict[str, Any]) -> None:
    (area,), (blocks,) = big_run["area"], big_run["blocks"]
    assert blocks["height"] > area["height"]
    assert area["y"] <= blocks["y"] <= area["y"] + 40, "its top is at the window's top"
    assert area["x"] <= blocks["x"] and blocks["x"] + blocks["width"] <= area["x"] + area["width"]
    assert big_run["blocksZoom"] >= 0.6


def test_fit_shows_the_whole_graph(big_run: dict[str, Any]) -> None:
    (area,) = big_run["area"]
    fitted = big_run["fitted"]
    assert big_run["fitTitle"] == "Fit the whole graph in the window (width and height)"
    # zoomed that far out every item is drawn, as a bare box
    assert sum(1 for b in fitted if b["id"].startswith("n:")) == big_run["total"] > 4000
    outside = [b["id"] for b in fitted if not _inside(b, area)]
    assert outside == []


def test_fit_width_reads_the_graph_from_its_top(big_run: dict[str, Any]) -> None:
    (area,) = big_run["area"]
    assert big_run["acrossZoom"] >= 1
    top = min(big_run["across"], key=lambda b: b["y"])
    assert top["id"] == "n:x" and _inside(top, area)


def test_the_overview_covers_no_node_and_a_tall_graph_fills_it(big_run: dict[str, Any]) -> None:
    (area,), (overview,) = big_run["area"], big_run["overview"]
    assert not _overlap(overview, area), "the overview has a column of its own"
    drawn = [b for b in big_run["across"] if _overlap(b, area)]
    assert drawn and not [b["id"] for b in drawn if _overlap(b, overview)]
    # the expanded graph is ~300 times as tall as wide: drawn across the column (scrolling
    # with the view), not as a line down it
    painted = big_run["painted"]
    assert painted["height"] >= 400 and painted["width"] >= 100
    assert painted["columns"] >= painted["width"] * 0.4


# -- problems and source lines, on a small partial graph -------------------------------------


#: a problem no node of the graph is at, with an identifier longer than the side panel
LONG_NAME = "bert_encoder_layer_0_attention_self_value_" * 3
UNMARKED = {"code": "FX013", "severity": "warning", "message": f"`{LONG_NAME}` is printed",
            "span": None, "nodes": []}
#: a problem inside library code that the module `blocks.1` ran: attached to its group
IN_GROUP = {"code": "FX010", "severity": "error", "message": "a library call failed",
            "span": None, "nodes": [], "group": "blocks.1", "attached": "group"}


def _nested_run(factory: pytest.TempPathFactory) -> tuple[PageRun, dict[str, Any]]:
    """The steps on the nested model's page, and what the tests compare them with."""
    output = nested_json(factory)
    path = output.parent / "net.py"
    document = json.loads(output.read_text(encoding="utf-8"))
    (marked,) = [p for p in document["problems"] if p["code"] == "FX001"]
    branch = _line(NESTED, "if h.sum() > 0:")
    unmarked = {**UNMARKED, "span": {**marked["span"], "line": branch + 1, "end_line": branch + 1}}
    in_group = {**IN_GROUP, "span": {**marked["span"], "line": branch - 1, "end_line": branch - 1}}
    # the view's side of the document's sources: written here, whatever the CLI embeds
    sources = {str(path): {str(n): text for n, text in enumerate(NESTED.splitlines(), 1)}}
    page = factory.mktemp("nested") / "net.html"
    problems = [marked, unmarked, in_group]
    page.write_text(graph_page({**document, "problems": problems, "sources": sources}),
                    encoding="utf-8")
    return PageRun(page, [
        {"eval": "document.querySelector('#fx-banner').textContent", "as": "banner"},
        {"eval": "(() => { const p = document.querySelector('#fx-panel');"
                 " return [p.scrollWidth, p.clientWidth]; })()", "as": "panelWidths"},
        {"click": "#fx-banner a.fx-problem-link"},
        {"boxes": "#graph g.selected", "as": "selected"},
        {"boxes": "#fx-source-lines .line", "as": "lines"},
        {"boxes": "#fx-source-lines .line.here", "as": "here"},
        {"boxes": "#fx-selected", "as": "panelTitle"},
        {"boxes": "#graph g.frame.problem", "as": "problemFrames"},
        {"click": "#fx-banner a.fx-problem-link >> nth=1"},
        {"boxes": "#graph g.selected", "as": "selectedGroup"},
        {"boxes": "#fx-group-problems li", "as": "groupProblems"},
        {"click": "#fx-banner a.fx-problem-link.unmarked"},
        {"eval": "document.querySelector('#fx-source-location').textContent", "as": "location"},
    ], width=1200, height=800), {"path": path, "marked": marked, "branch": branch}


@pytest.fixture(scope="module")
def nested_run(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return runs["nested"]


def test_the_banner_counts_only_the_problems_it_marks(nested_run: dict[str, Any]) -> None:
    branch = nested_run["branch"]
    assert nested_run["banner"] == (
        "Partial graph: tracing could not follow the code everywhere. 3 problems, 2 marked in "
        f"red: {nested_run['marked']['code']} net.py:{branch} {nested_run['marked']['message']}"
        f" · FX010 net.py:{branch - 1} a library call failed"
        f" · FX013 net.py:{branch + 1} {UNMARKED['message']}")


def test_a_click_on_a_problem_selects_its_nodes(nested_run: dict[str, Any]) -> None:
    assert {b["id"] for b in nested_run["selected"]} == \
        {f"n:{name}" for name in nested_run["marked"]["nodes"]}
    # a problem that no node is at shows its line
    assert nested_run["location"] == f"{nested_run['path']}:{nested_run['branch'] + 1}"


def test_a_problem_attached_to_a_group_marks_and_selects_it(nested_run: dict[str, Any]) -> None:
    assert [b["id"] for b in nested_run["problemFrames"]] == ["g:blocks", "g:blocks.1"]
    assert [b["id"] for b in nested_run["selectedGroup"]] == ["g:blocks.1"]
    assert [li["text"] for li in nested_run["groupProblems"]] == [
        f"FX010 net.py:{nested_run['branch'] - 1} a library call failed"]


def test_the_panel_shows_the_source_lines_around_the_node(nested_run: dict[str, Any]) -> None:
    branch = nested_run["branch"]
    assert [line["text"] for line in nested_run["lines"]] == [
        f"{n} {text[4:]}" for n, text in
        enumerate(NESTED.splitlines()[branch - 3:branch + 2], branch - 2)]
    (here,) = nested_run["here"]
    assert here["text"] == f"{branch}     if h.sum() > 0:"


def test_long_identifiers_wrap_in_the_side_panel(nested_run: dict[str, Any]) -> None:
    scroll_width, client_width = nested_run["panelWidths"]
    assert scroll_width <= client_width


# -- timm's ViT: search, regular expressions, the selected node's edges ----------------------

VIT = """\
import timm
import torch
from torch import nn

# the attention as its parts (matmul, softmax), not one fused call
timm.layers.set_fused_attn(False)


class Vit(nn.Module):
    # fxls: args (torch.randn(1, 3, 224, 224),)
    def __init__(self):
        super().__init__()
        self.vit = timm.create_model("vit_base_patch16_224", pretrained=False)

    def forward(self, x):
        return self.vit(x)
"""

#: what the view shows: how many nodes, the selection, the open groups, the zoom
SHOWN = """({ nodes: view.shown().nodes.length,
  selected: document.querySelector('#fx-selected').textContent,
  open: Array.from(view.model.groups.values()).filter((g) => g.expanded).map((g) => g.path),
  zoom: view.transform, pressed: document.querySelector('#fx-bookkeeping').ariaPressed })"""

#: VS Code draws the panel anew after every trace, with the state the view saved: a second
#: view made from the first one's saved state shows the shape ops and folds the overview too
STATE_KEPT = """new Promise((resolve) => {
  const open = (saved, save) => {
    const mount = document.createElement('div');
    mount.style.cssText = 'position: fixed; inset: 0; background: #fff';
    document.body.append(mount);
    return new view.constructor(mount, view.model.doc, { reveal() {}, saveState: save }, saved);
  };
  let state = null;
  const first = open(null, (s) => (state = s));
  first.rebuild(true);
  first.setOverview(false);
  setTimeout(() => {
    const again = open(state, () => {});
    resolve({ state: { showBookkeeping: state.showBookkeeping, overview: state.overview },
              nodes: [first.shown().nodes.length, again.shown().nodes.length],
              pressed: Array.from(document.querySelectorAll('.fx-bookkeeping')).pop()
                .getAttribute('aria-pressed'),
              overview: Array.from(document.querySelectorAll('.fx-overview')).pop().className });
  }, 400);
})"""

EDGE_STYLE = """Array.from(document.querySelectorAll('#graph path.edge')).map((e) => ({
  cls: e.getAttribute('class'), stroke: getComputedStyle(e).stroke,
  opacity: getComputedStyle(e).opacity }))"""


def _vit_run(factory: pytest.TempPathFactory) -> PageRun:
    folder = factory.mktemp("vit")
    count = "document.querySelector('#fx-search-count')"
    return PageRun(vit_unfused_page(factory), [
        {"fill": "#fx-search", "text": "softmax"},
        {"eval": f"{count}.textContent", "as": "count"},
        {"boxes": "#fx-matches summary", "as": "modules"},
        {"boxes": "#fx-matches li", "as": "results"},
        {"click": "#fx-matches details[data-module='vit.blocks.3.attn'] a"},
        {"boxes": "#graph g.selected", "as": "selected"},
        {"boxes": "#fx-matches li.current", "as": "current"},
        {"boxes": ".fx-draw", "as": "area"},
        {"eval": EDGE_STYLE, "as": "edges"},
        {"eval": "view.model.nodes.get('softmax_3').data.users", "as": "users"},
        {"boxes": "#fx-source-lines .line.here", "as": "here"},
        {"screenshot": str(folder / "graph-vit-search.png")},
        {"eval": SHOWN, "as": "folded"},
        {"click": "#fx-bookkeeping"},
        {"eval": SHOWN, "as": "unfolded"},
        {"click": "#fx-bookkeeping"},
        {"eval": SHOWN, "as": "foldedAgain"},
        {"fill": "#fx-search", "text": "/matmul|SOFTMAX/"},
        {"eval": f"{count}.textContent", "as": "regexCount"},
        {"boxes": "#fx-matches summary", "as": "regexModules"},
        {"fill": "#fx-search", "text": "/soft(max/"},
        {"eval": f"[{count}.textContent, {count}.className]", "as": "badRegex"},
        {"eval": "document.querySelectorAll('#graph g.match').length", "as": "badMatches"},
        {"eval": STATE_KEPT, "as": "kept"},
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
    """What each page's steps read, the pages loaded one after the other in one browser."""
    nested, compared = _nested_run(tmp_path_factory)
    pages = {"big": _big_run(tmp_path_factory), "nested": nested}
    if not NO_TIMM:
        pages["vit"] = _vit_run(tmp_path_factory)
    read = drive_pages(pages)
    read["nested"].update(compared)
    return read


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_search_results_are_grouped_by_module_with_counts(vit_run: dict[str, Any]) -> None:
    assert vit_run["count"] == "12 found in 12 modules"
    assert [m["text"] for m in vit_run["modules"]] == [
        f"vit.blocks.{i}.attn (1) Attention" for i in range(12)]
    # each result says where it is: the module above it, its file and line here
    assert all(re.fullmatch(r"softmax(_\d+)? softmax · attention\.py:\d+", r["text"])
               for r in vit_run["results"]), vit_run["results"]
    # a click on one goes to it
    (selected,) = vit_run["selected"]
    (area,) = vit_run["area"]
    assert selected["id"] == "n:softmax_3" and _inside(selected, area)
    (current,) = vit_run["current"]
    assert current["text"].startswith("softmax_3 ")


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_a_regular_expression_search_and_a_bad_one(vit_run: dict[str, Any]) -> None:
    assert vit_run["regexCount"] == "36 found in 12 modules"
    assert [m["text"] for m in vit_run["regexModules"]] == [
        f"vit.blocks.{i}.attn (3) Attention" for i in range(12)]
    message, classes = vit_run["badRegex"]
    assert message.startswith("bad regular expression: ") and "fx-error" in classes
    assert vit_run["badMatches"] == 0


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_the_selected_nodes_edges_are_coloured_the_rest_faded(vit_run: dict[str, Any]) -> None:
    edges = vit_run["edges"]
    inputs = [e for e in edges if "edge-in" in e["cls"]]
    outputs = [e for e in edges if "edge-out" in e["cls"]]
    assert len(inputs) == 1 and len(outputs) == len(vit_run["users"]) == 1
    assert {e["stroke"] for e in inputs} == {"rgb(37, 99, 235)"}
    assert {e["stroke"] for e in outputs} == {"rgb(234, 88, 12)"}
    rest = [e for e in edges if e not in inputs and e not in outputs]
    assert rest and {e["opacity"] for e in rest} == {"0.22"}


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_the_panel_shows_the_library_line_of_a_node(vit_run: dict[str, Any]) -> None:
    (here,) = vit_run["here"]
    assert re.fullmatch(r"\d+ attn = attn\.softmax\(dim=-1\)", here["text"])


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_shape_ops_toggle_keeps_the_open_groups_selection_and_zoom(
        vit_run: dict[str, Any]) -> None:
    folded, unfolded = vit_run["folded"], vit_run["unfolded"]
    assert (folded["pressed"], unfolded["pressed"]) == ("false", "true")
    # the open attention shows its shape bookkeeping (x.shape, getitem of sizes) again
    assert unfolded["nodes"] > folded["nodes"]
    assert vit_run["foldedAgain"] == folded
    for key in ("selected", "open", "zoom"):
        assert unfolded[key] == folded[key], key
    assert folded["selected"] == "softmax_3" and "vit.blocks.3.attn" in folded["open"]


@pytest.mark.skipif(NO_TIMM, reason=NO_ZOO_REASON)
def test_the_saved_state_keeps_shape_ops_and_the_overview(vit_run: dict[str, Any]) -> None:
    kept = vit_run["kept"]
    assert kept["state"] == {"showBookkeeping": True, "overview": False}
    first, again = kept["nodes"]
    assert first == again and kept["pressed"] == "true"
    assert "folded" in kept["overview"].split()
