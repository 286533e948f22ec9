"""An FX pass's before/after page (``fxls graph FILE::pass --format html``), the graph view's
split pane, driven in headless Chromium: both graphs load, the nodes the pass added, removed
and rewired are marked, the pass's FX005 sits on the node it concerns, a click on a node the
pass made shows the pass line that made it (and marks the same node in the other pane), a
click on a removed node its model line; and the page's data (``pass_document``) on a model
with nested modules, where a node the pass adds is put in the module of its neighbours."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fxls.output.pass_page import pass_document
from fxls.report import NodeInfo, PassGraphRun, PassReport, Span
from tests.graph_view.test_graph_page import EXTENSION, browser  # noqa: F401
from tests.passes.samples import PASSES

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "scripts" / "pass_page_browser.cjs"
LINES = PASSES.splitlines()
NEG_LINE = LINES.index("                neg = gm.graph.call_function(torch.neg, (node,))") + 1
GELU_LINE = next(i for i, line in enumerate(LINES, 1) if "functional.gelu" in line)
MODEL_LINE = next(i for i, line in enumerate(LINES, 1) if "torch.relu(self.lin(x))" in line)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pass_page")
    (folder / "passes.py").write_text(PASSES, encoding="utf-8")
    written = {}
    for name in ("negate_after_relu", "relu_to_gelu"):
        done = subprocess.run([sys.executable, "-m", "fxls", "graph", f"passes.py::{name}",
                               "--format", "html"], capture_output=True, text=True,
                              timeout=240, cwd=folder)
        assert done.returncode == 0, done.stderr
        written[name] = folder / f"{name}.html"
        written[name].write_text(done.stdout, encoding="utf-8")
    return written


def _data(page: Path) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                      page.read_text(encoding="utf-8"), re.S)
    assert found is not None
    return json.loads(found.group(1))


def drive(page: Path, *arguments: str) -> dict[str, Any]:
    env = {"NODE_PATH": str(EXTENSION / "node_modules"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["node", str(DRIVER), str(page), *arguments], capture_output=True,
                          text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["errors"] == [], result["errors"]
    assert result["requests"] == [], "the page reached for the network"
    assert result["pageError"] is None
    return result


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
    browser: None, pages: dict[str, Path], tmp_path: Path  # noqa: F811
) -> None:
    shot = tmp_path / "neg.png"
    result = drive(pages["negate_after_relu"], "--click-after", "neg", "--click-before",
                   "relu", "--screenshot", str(shot))
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


def test_removed_nodes_are_drawn_in_the_graph_before(
    browser: None, pages: dict[str, Path]  # noqa: F811
) -> None:
    result = drive(pages["relu_to_gelu"], "--click-after", "gelu")
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
