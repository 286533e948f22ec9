"""An FX pass's before/after page (``fxls graph FILE::pass --format html``), the graph view's
split pane, driven in headless Chromium: both graphs load, the nodes the pass added, removed
and rewired are marked, the pass's FX005 sits on the node it concerns, a click on a node the
pass made shows the pass line that made it (and marks the same node in the other pane), a
click on a removed node its model line; the panes open at the same expansion and zoom and
keep them; a conv-bn fuser's swapped convs say both classes; a node a pass added sits in the
module of the node it replaced, with its shape. And the page's data (``pass_document``) on a
model with nested modules, where a node the pass adds is put in the module of its neighbours.

Both sample files are analysed once, by the worker as ``fxls graph`` has them analysed, and
each page, JSON document and table rendered from that report as ``fxls graph FILE::pass
--format html|json|table`` renders it."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.output.pass_graph import graphs_of, render_pass
from fxls.output.pass_page import pass_document
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import NodeInfo, PassGraphRun, PassReport, Span
from tests.graph_view.browser import PageRun, browser, drive_pages  # noqa: F401
from tests.passes.samples import PASSES

LINES = PASSES.splitlines()
NEG_LINE = LINES.index("                neg = gm.graph.call_function(torch.neg, (node,))") + 1
GELU_LINE = next(i for i, line in enumerate(LINES, 1) if "functional.gelu" in line)
MODEL_LINE = next(i for i, line in enumerate(LINES, 1) if "torch.relu(self.lin(x))" in line)


# torch's conv-bn fusion tutorial (pytorch.org/tutorials/intermediate/fx_conv_bn_fuser.html)
# on a model whose convs sit in blocks, and a pass that adds a node inside each block
FUSER = """import copy

import torch
import torch.fx as fx
from torch import nn
from torch.nn.utils.fusion import fuse_conv_bn_eval


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        h = self.blocks(self.stem(x))
        return self.head(h.mean((2, 3)))


def _parent_name(target):
    *parent, name = target.rsplit(".", 1)
    return parent[0] if parent else "", name


def replace_node_module(node, modules, new_module):
    parent_name, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent_name], name, new_module)


def fuse(model: nn.Module) -> fx.GraphModule:
    model = copy.deepcopy(model).eval()
    fx_model = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    for node in fx_model.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        conv = node.args[0]
        if conv.op != "call_module" or not isinstance(modules[conv.target], nn.Conv2d):
            continue
        if len(conv.users) > 1:
            continue
        fused_conv = fuse_conv_bn_eval(modules[conv.target], modules[node.target])
        replace_node_module(conv, modules, fused_conv)
        node.replace_all_uses_with(conv)
        fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.recompile()
    return fx_model


def gelu_in_blocks(gm: fx.GraphModule) -> fx.GraphModule:
    for node in list(gm.graph.nodes):
        if node.target is torch.relu:
            with gm.graph.inserting_after(node):
                gelu = gm.graph.call_function(torch.nn.functional.gelu, node.args)
            node.replace_all_uses_with(gelu)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm
"""

#: what the child writes: (file, pass, format)
OUTPUTS = [("passes.py", "negate_after_relu", "html"), ("passes.py", "relu_to_gelu", "html"),
           ("fuser.py", "fuse", "html"), ("fuser.py", "fuse", "json"),
           ("fuser.py", "fuse", "table"),
           ("fuser.py", "gelu_in_blocks", "html"), ("fuser.py", "gelu_in_blocks", "json")]

@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each pass's page (``name``), JSON document (``name.json``) and table
    (``name.table``)."""
    folder = tmp_path_factory.mktemp("pass_page")
    settings = Settings(project=ProjectLayout(root=str(folder)))
    requests = []
    for name, text in (("passes.py", PASSES), ("fuser.py", FUSER)):
        (folder / name).write_text(text, encoding="utf-8")
        requests.append(AnalysisRequest(str(folder / name), text, settings))
    reports = dict(zip(("passes.py", "fuser.py"), asyncio.run(
        analyze_many(requests, python=sys.executable, jobs=2)), strict=True))
    for file, name, fmt in OUTPUTS:  # as `fxls graph FILE::name --format fmt` writes it
        report = reports[file]
        found = next(p for p in report.passes if p.name == name)
        (folder / f"{name}.{fmt}").write_text(
            render_pass(found, fmt, graphs_of(report), report.diagnostics), encoding="utf-8")
    return {name if fmt == "html" else f"{name}.{fmt}": folder / f"{name}.{fmt}"
            for _, name, fmt in OUTPUTS}


def _data(page: Path) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                      page.read_text(encoding="utf-8"), re.S)
    assert found is not None
    return json.loads(found.group(1))


def _text(selector: str) -> str:
    """A step's expression: the element's text, "" when there is none or it is hidden."""
    return (f"(() => {{ const e = document.querySelector({selector!r}); "
            "return e && e.checkVisibility() ? e.innerText : ''; })()")


def _texts(selector: str) -> str:
    return f"[...document.querySelectorAll({selector!r})].map((e) => e.innerText)"


def _pane_nodes(pane: str) -> str:
    """Every drawn node of a pane: name, classes, whether it carries a problem badge."""
    return (f"[...document.querySelectorAll('#fx-pane-{pane} g.node')].map((g) => ({{"
            "name: g.getAttribute('data-id').slice(2), classes: g.getAttribute('class')"
            ".split(/\\s+/), badge: !!g.querySelector('.badge')}))")


def _click_node(pane: str, name: str) -> list[dict[str, Any]]:
    """A click on node ``name`` of ``pane`` (brought into view first), and what the page
    shows of it: the source in the bar, the panel, the same node in the other pane."""
    other = "before" if pane == "after" else "after"
    key = f"click{pane.capitalize()}"
    read = {"location": _text("#fx-source-location"), "selected": _text("#fx-selected"),
            "pane": _text("#fx-selected-pane"), "mark": _text("#fx-node-table .fx-mark"),
            "source": _text("#fx-node-source"), "origin": _text("#fx-node-origin"),
            "otherPane": f"[...document.querySelectorAll('#fx-pane-{other} g.counterpart')]"
                         ".map((g) => g.getAttribute('data-id').slice(2))"}
    return [{"eval": f"pass.{pane}.focusNode(pass.{pane}.model.nodes.get({name!r}), false)",
             "as": f"{key}Focus"},
            {"click": f"#fx-pane-{pane} g.node[data-id='n:{name}']"},
            {"eval": "({" + ", ".join(f"{k}: {v}" for k, v in read.items()) + "})", "as": key}]


def _as_a_person(page: Path, click_after: str | None = None, click_before: str | None = None,
                 screenshot: Path | None = None) -> PageRun:
    """What a person sees on the page: the bar, both panes' nodes; then a click on a node
    of the graph after the pass, one of the graph before it, and *After* only and back
    (``split``: both panes shown again)."""
    steps: list[dict[str, Any]] = [
        {"eval": _text(".fx-pass-bar h1"), "as": "title"},
        {"eval": _texts(".fx-pane-title"), "as": "paneTitles"},
        {"eval": _text("#fx-legend"), "as": "legend"},
        {"eval": _text("#fx-banner"), "as": "banner"},
        {"eval": _texts("#fx-changes .chip"), "as": "changes"},
        {"eval": _pane_nodes("before"), "as": "before"},
        {"eval": _pane_nodes("after"), "as": "after"},
    ]
    if click_after:
        steps += _click_node("after", click_after)
    if screenshot:
        steps.append({"screenshot": str(screenshot)})
    if click_before:
        steps += _click_node("before", click_before)
    visible = "({beforeVisible: document.querySelector('#fx-pane-before').checkVisibility(), " \
        "afterVisible: document.querySelector('#fx-pane-after').checkVisibility()})"
    steps += [{"click": "#fx-mode-after"}, {"eval": visible, "as": "afterOnly"},
              {"click": "#fx-mode-split"}, {"eval": visible, "as": "splitVisible"}]
    return PageRun(page, steps, width=1400, height=800)


def _split(result: dict[str, Any]) -> dict[str, Any]:
    return {**result, "split": result["splitVisible"] == {"beforeVisible": True,
                                                          "afterVisible": True}}


def _marks(nodes: list[dict[str, Any]]) -> dict[str, str | None]:
    return {n["name"]: next((c[5:] for c in n["classes"] if c.startswith("mark-")), None)
            for n in nodes}


def test_the_page_holds_both_graphs_with_the_changes_marked(pages: dict[str, Path]) -> None:
    data = _data(pages["relu_to_gelu"])
    assert data["kind"] == "pass" and data["name"] == "relu_to_gelu"
    (run,) = data["runs"]
    before = {n["name"]: n for n in run["before"]["nodes"]}
    after = {n["name"]: n for n in run["after"]["nodes"]}
    assert before["relu"]["mark"] == "removed" and "gelu" not in before
    assert after["gelu"]["mark"] == "added" and "relu" not in after
    assert after["gelu"]["span"]["line"] == GELU_LINE  # the pass line that made it
    assert after["output"]["mark"] == "rewired" and before["lin"]["mark"] is None
    assert after["lin"]["module_path"] == "lin"
    # the FX017 of the pass (it changes the outputs) is on the run, on no node
    assert [p["code"] for p in run["after"]["problems"]] == ["FX017"]


def test_in_a_browser_both_panes_marks_problems_and_click_to_line(
    runs: dict[str, dict[str, Any]]
) -> None:
    result = _split(runs["negate_after_relu"])
    shot = runs["shots"]["neg"]
    assert result["title"] == "negate_after_relu"
    assert result["paneTitles"] == ["Before · Net", "After · Net"]
    assert result["legend"].split() == ["added", "removed", "rewired", "problem"]
    before, after = _marks(result["before"]), _marks(result["after"])
    assert set(before) == {"x", "lin", "relu", "output"}
    assert set(after) == {"x", "lin", "relu", "neg", "output"}
    assert after["neg"] == "added" and after["output"] == "rewired" and after["lin"] is None
    # FX005 (neg placed before its input) on the node it concerns, and in the banner
    neg = next(n for n in result["after"] if n["name"] == "neg")
    assert "problem" in neg["classes"] and neg["badge"]
    assert f"FX005 passes.py:{NEG_LINE}" in result["banner"]
    assert result["changes"] == ["+ neg", "~ output"]
    # a click on the node the pass made: the pass line that made it
    click = result["clickAfter"]
    assert click["selected"] == "neg" and click["pane"] == "After · Net"
    assert click["location"].endswith(f"passes.py:{NEG_LINE}")
    assert click["source"] == f"passes.py:{NEG_LINE}" and click["mark"] == "added by the pass"
    # a model node: its model line, and the same node marked in the other pane
    click = result["clickBefore"]
    assert click["selected"] == "relu" and click["location"].endswith(f"passes.py:{MODEL_LINE}")
    assert click["otherPane"] == ["relu"]
    assert result["afterOnly"] == {"beforeVisible": False, "afterVisible": True}
    assert result["split"] is True
    assert shot.stat().st_size > 10_000


def test_removed_nodes_are_drawn_in_the_graph_before(runs: dict[str, dict[str, Any]]) -> None:
    result = _split(runs["relu_to_gelu"])
    assert _marks(result["before"])["relu"] == "removed"
    assert _marks(result["after"])["gelu"] == "added"
    assert result["clickAfter"]["source"] == f"passes.py:{GELU_LINE}"
    assert result["banner"].startswith("1 problem in the pass (information): FX017")


def _node(name: str, users: list[str], path: str | None = None, line: int | None = None,
          op: str = "call_function") -> NodeInfo:
    span = Span("/m.py", line, line, 4, 20) if line else None
    return NodeInfo(name, op, "torch.relu", "()", "{}", users, span,  # type: ignore[arg-type]
                    module_path=path)


def test_an_added_node_goes_into_the_module_of_its_neighbours() -> None:
    """A pass's new node has no module path: it is drawn in the module its inputs and
    users share (here `blocks.1`), a node it rewired keeps its model module and gets its
    model line as `origin`."""
    from fxls.report import ModuleReport, TraceStatus

    before = ModuleReport("Net", TraceStatus.TRACED, nodes=[
        _node("x", ["conv"], op="placeholder"),
        _node("conv", ["bn"], "blocks.1.conv", 5, "call_module"),
        _node("bn", ["output"], "blocks.1", 6),
        _node("output", [], op="output"),
    ])
    run = PassGraphRun(
        "Net", added=["clamp"], rewired=["bn"],
        nodes=[NodeInfo("clamp", "call_function", "torch.clamp", "(%conv,)", "{}", ["bn"],
                        Span("/p.py", 30, 30, 8, 40)),
               NodeInfo("bn", "call_function", "torch.relu", "(%clamp,)", "{}", ["output"],
                        Span("/p.py", 31, 31, 8, 40))],
        before="def forward(self, x):\n    conv = self.blocks.1.conv(x)\n"
               "    bn = torch.relu(conv)\n    return bn\n",
        after="def forward(self, x):\n    conv = self.blocks_1_conv(x)\n"
              "    clamp = torch.clamp(conv)\n    bn = torch.relu(clamp)\n    return bn\n")
    document = pass_document(PassReport("clamp_it", "graph_module", runs=[run]), {"Net": before})
    after = {n["name"]: n for n in document["runs"][0]["after"]["nodes"]}
    assert after["clamp"]["module_path"] == "blocks.1" and after["clamp"]["mark"] == "added"
    assert after["bn"]["module_path"] == "blocks.1" and after["bn"]["mark"] == "rewired"
    assert after["bn"]["span"]["line"] == 31 and after["bn"]["origin"]["line"] == 6


# -- a fuser's module swaps, an added node's module and shape, panes kept in step ----------

FUSED = "Conv2d+BatchNorm2d → Conv2d"
CONV = "torch.nn.modules.conv.Conv2d"


def _json_run(pages: dict[str, Path], name: str) -> dict[str, Any]:
    (run,) = json.loads(pages[f"{name}.json"].read_text(encoding="utf-8"))["runs"]
    return run


def test_a_fusers_swapped_convs_say_both_classes(pages: dict[str, Path]) -> None:
    """The tutorial's fuser puts a new conv in place of each conv+bn (``setattr``): the calls
    of those convs, unchanged in the graph, are marked with the classes before and after;
    the stem conv and the head, copied with the model, are not."""
    run = _json_run(pages, "fuse")
    assert run["removed"] == ["blocks_0_bn", "blocks_1_bn"] and run["added"] == []
    assert run["swapped"] == {"blocks.0.conv": CONV, "blocks.1.conv": CONV}
    assert run["summary"] == "Net: +0 -2, 2 rewired, 2 modules swapped"
    nodes = {n["name"]: n for n in run["nodes"]}
    assert {name: n["swap"] for name, n in nodes.items() if "swap" in n} == {
        "blocks_0_conv": FUSED, "blocks_1_conv": FUSED}
    assert nodes["blocks_0_conv"]["module_type"] == CONV
    # a rewired node calls what it called: named as the model names it, in its module
    assert (nodes["relu"]["mark"], nodes["relu"]["target"]) == ("~", "torch.relu")
    assert nodes["relu"]["module_path"] == "blocks.0"
    table = pages["fuse.table"].read_text(encoding="utf-8").splitlines()
    row = next(line.split() for line in table if " blocks_0_conv " in line)
    assert row[:2] == ["blocks_0_conv", "call_module"]
    assert " ".join(row[2:6]) == f"blocks.0.conv ({FUSED})"
    (page_run,) = _data(pages["fuse"])["runs"]
    for side in ("before", "after"):
        drawn = {n["name"]: n for n in page_run[side]["nodes"]}
        assert (drawn["blocks_0_conv"]["mark"], drawn["blocks_0_conv"]["swap"]) == (
            "swapped", FUSED)
        assert drawn["stem"]["mark"] is None and "swap" not in drawn["stem"]


def test_an_added_node_sits_in_the_module_of_the_node_it_replaced_with_its_shape(
    pages: dict[str, Path]
) -> None:
    """``gelu`` took the uses of ``blocks.0``'s relu: it is drawn in ``blocks.0`` (its
    neighbours, ``blocks.0.bn`` and ``blocks.1.conv``, share only ``blocks``), with the shape
    the graph after the pass gives it on the model's example inputs."""
    run = _json_run(pages, "gelu_in_blocks")
    assert (run["added"], run["removed"]) == (["gelu", "gelu_1"], ["relu", "relu_1"])
    nodes = {n["name"]: n for n in run["nodes"]}
    assert (nodes["gelu"]["mark"], nodes["gelu"]["module_path"]) == ("+", "blocks.0")
    assert (nodes["gelu_1"]["mark"], nodes["gelu_1"]["module_path"]) == ("+", "blocks.1")
    relu = nodes["relu"]  # removed: as the model traced it
    assert relu["mark"] == "-" and relu["shape"] is not None and len(relu["shape"]) == 4
    assert (nodes["gelu"]["shape"], nodes["gelu"]["dtype"]) == (relu["shape"], "float32")
    (page_run,) = _data(pages["gelu_in_blocks"])["runs"]
    drawn = {n["name"]: n for n in page_run["after"]["nodes"]}
    assert (drawn["gelu"]["module_path"], drawn["gelu"]["shape"]) == ("blocks.0", relu["shape"])


_EXPANDED = "[...{side}.model.groups.values()].filter((g) => g.parent && g.expanded)" \
    ".map((g) => g.path).sort()"


def _pane_state(key: str) -> list[dict[str, Any]]:
    """Steps that read both panes' open groups and their zoom and pan as drawn (the SVG
    transform) as ``key``."""
    return [{"eval": f"[{_EXPANDED.format(side='pass.before')}, "
                     f"{_EXPANDED.format(side='pass.after')}]", "as": f"{key}Expanded"},
            {"eval": "['before', 'after'].map((side) => document.querySelector("
                     "`#fx-pane-${side} g.viewport`).getAttribute('transform'))",
             "as": f"{key}Transform"}]


def _in_step(page: Path, shot: Path) -> PageRun:
    """Steps on the fuser's page: each pane's groups opened and closed, zoomed, the overview,
    collapse all, sync off and on, each read in both panes; the swapped convs."""
    return PageRun(page, [
        *_pane_state("open"),
        {"click": "#fx-pane-after g.frame[data-id='g:blocks.1'] .frame-title"},
        *_pane_state("collapsed"),
        {"click": "#fx-pane-before g.group[data-id='g:blocks.1']"},
        *_pane_state("expanded"),
        {"eval": "pass.before.zoomBy(0.8)", "as": "zoom"},
        *_pane_state("zoomed"),
        {"click": "#fx-pane-after .fx-overview-toggle"},
        {"eval": "[...document.querySelectorAll('.fx-overview')].map((o) => "
                 "!o.classList.contains('folded'))", "as": "overviews"},
        *_pane_state("overview"),
        {"boxes": "#fx-pane-after g.node.mark-swapped", "as": "swapped"},
        {"boxes": "#fx-pane-before g.node.mark-swapped", "as": "swappedBefore"},
        {"click": "#fx-pane-after g.node[data-id='n:blocks_0_conv']"},
        {"boxes": "#fx-node-table .fx-swap", "as": "panel"},
        {"screenshot": str(shot)},
        {"click": "#fx-pane-before button.fx-collapse-all"},
        *_pane_state("collapsedAll"),
        {"click": "#fx-sync"},
        {"click": "#fx-pane-before button.fx-expand-all"},
        *_pane_state("unsynced"),
        {"click": "#fx-sync"},
        *_pane_state("resynced"),
    ])


def test_in_a_browser_the_panes_keep_in_step_and_the_swapped_convs_are_marked(
    runs: dict[str, dict[str, Any]]
) -> None:
    result, shot = runs["fuse"], runs["shots"]["fuse"]
    before, after = result["openExpanded"]
    assert before == after == ["blocks", "blocks.0", "blocks.1"]
    assert result["openTransform"][0] == result["openTransform"][1]
    # a click on blocks.1's title in the graph after the pass closes it in both panes
    assert result["collapsedExpanded"] == [["blocks", "blocks.0"]] * 2
    assert result["collapsedTransform"][0] == result["collapsedTransform"][1]
    # a click on the closed blocks.1 in the graph before it opens it in both
    assert result["expandedExpanded"] == [["blocks", "blocks.0", "blocks.1"]] * 2
    assert result["expandedTransform"][0] == result["expandedTransform"][1]
    # zooming one pane zooms the other
    assert result["zoomedTransform"][0] == result["zoomedTransform"][1]
    assert result["zoomedTransform"] != result["expandedTransform"]
    # the overview opened in one pane opens in the other (equal drawing areas)
    assert result["overviews"] == [True, True]
    assert result["overviewTransform"][0] == result["overviewTransform"][1]
    # Collapse (every module) in one pane: in both
    assert result["collapsedAllExpanded"] == [[], []]
    assert result["collapsedAllTransform"][0] == result["collapsedAllTransform"][1]
    # sync off: each pane on its own; back on: the graph after the pass as the one before
    assert result["unsyncedExpanded"] == [["blocks", "blocks.0", "blocks.1"], []]
    assert result["resyncedExpanded"] == [["blocks", "blocks.0", "blocks.1"]] * 2
    assert result["resyncedTransform"][0] == result["resyncedTransform"][1]
    for boxes in (result["swapped"], result["swappedBefore"]):
        assert sorted(b["id"] for b in boxes) == ["n:blocks_0_conv", "n:blocks_1_conv"]
        assert all(FUSED in b["text"] for b in boxes)
    assert [b["text"] for b in result["panel"]] == [FUSED]
    assert shot.stat().st_size > 10_000


def test_in_a_browser_an_added_node_is_drawn_in_its_modules_frame_with_its_shape(
    runs: dict[str, dict[str, Any]], pages: dict[str, Path]
) -> None:
    result = runs["gelu_in_blocks"]
    ((frame,), (gelu,)) = result["frame"], result["gelu"]
    assert frame["x"] < gelu["x"] and gelu["x"] + gelu["width"] < frame["x"] + frame["width"]
    assert frame["y"] < gelu["y"] and gelu["y"] + gelu["height"] < frame["y"] + frame["height"]
    rows = [r["text"] for r in result["rows"]]
    assert "passadded by the pass" in rows
    shape = next(r for r in rows if r.startswith("shape"))
    relu = next(n for n in _json_run(pages, "gelu_in_blocks")["nodes"] if n["name"] == "relu")
    assert shape == f"shapefloat32[{', '.join(map(str, relu['shape']))}]"
    assert "moduleblocks.0" in rows


# -- every page above driven in one browser ---------------------------------------------------

@pytest.fixture(scope="module")
def runs(browser: None, pages: dict[str, Path],  # noqa: F811
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What each browser test's steps read, by page, the pages loaded one after the other
    in one browser (a launch costs seconds); ``shots``: the screenshots' paths."""
    folder = tmp_path_factory.mktemp("pass_page_shots")
    shots = {"neg": folder / "neg.png", "fuse": folder / "pass-page.png"}
    read = drive_pages({
        "negate_after_relu": _as_a_person(pages["negate_after_relu"], click_after="neg",
                                          click_before="relu", screenshot=shots["neg"]),
        "relu_to_gelu": _as_a_person(pages["relu_to_gelu"], click_after="gelu"),
        "fuse": _in_step(pages["fuse"], shots["fuse"]),
        "gelu_in_blocks": PageRun(pages["gelu_in_blocks"], [
            {"boxes": "#fx-pane-after g.frame[data-id='g:blocks.0'] > rect", "as": "frame"},
            {"boxes": "#fx-pane-after g.node[data-id='n:gelu'] > rect", "as": "gelu"},
            {"click": "#fx-pane-after g.node[data-id='n:gelu']"},
            {"boxes": "#fx-node-table tr", "as": "rows"},
        ]),
    })
    return {**read, "shots": shots}
