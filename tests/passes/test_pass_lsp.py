"""FX passes in the editor, end to end (real client, server and worker): the pass
diagnostic at its exact range, the code lens on each pass with what it did to each graph,
hover on a pass line (the nodes it made), and ``fxls.showGraph``'s before/after view."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxls.graph_view.pass_view import lens_title, pass_text, short_problem
from fxls.report import PassGraphRun, PassReport
from tests.lsp_client import open_and_wait
from tests.passes.samples import PASSES

#: a pass in a file without a model: it runs on representative graphs
ONLY_A_PASS = '''import torch
import torch.fx as fx


def relu_to_gelu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target in (torch.relu, torch.nn.functional.relu):
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(torch.nn.functional.gelu, node.args)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm
'''


def _range(text: str, needle: str) -> types.Range:
    """The range of ``needle`` in ``text`` (one line, ASCII: UTF-16 = characters)."""
    index = text.index(needle)
    assert text.count(needle) == 1, needle
    line = text.count("\n", 0, index)
    start = index - (text.rfind("\n", 0, index) + 1)
    return types.Range(types.Position(line, start), types.Position(line, start + len(needle)))


def _inside(text: str, needle: str, offset: int = 1) -> types.Position:
    return types.Position(_range(text, needle).start.line,
                          _range(text, needle).start.character + offset)


async def _open(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    path.write_text(text, encoding="utf-8")
    return await open_and_wait(client, path, text)


async def _lenses(client: LanguageClient, path: Path) -> dict[str, types.CodeLens]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(path.as_uri())))
    return {lens.command.title: lens for lens in lenses or [] if lens.command}


async def _hover(client: LanguageClient, path: Path, position: types.Position) -> str:
    hover = await client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), position))
    assert hover is not None, position
    assert isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_pass_diagnostic_lens_hover_and_before_after_view(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "passes.py"
    diagnostics = await _open(client, path, PASSES)
    fx005 = [d for d in diagnostics if d.code == "FX005"]
    assert len(fx005) == 1, diagnostics
    # at the pass line that placed `neg` before its input: the call that created it
    assert fx005[0].range == _range(PASSES, "gm.graph.call_function(torch.neg, (node,))")
    assert fx005[0].severity == types.DiagnosticSeverity.Error
    assert "`neg` uses `relu` before it is defined" in fx005[0].message
    assert fx005[0].data["pass"] == "negate_after_relu"

    # a code lens on each pass's name: what it did to each graph, or its problem
    lenses = await _lenses(client, path)
    negate = lenses["negate_after_relu — Net: node `neg` uses `relu` before it is defined"]
    assert negate.range == _range(PASSES, "negate_after_relu")
    gelu = lenses["relu_to_gelu — Net: +1 -1, 1 rewired"]
    assert gelu.range == _range(PASSES, "relu_to_gelu")
    assert gelu.command.command == "fxls.showGraph"
    assert list(gelu.command.arguments) == [path.as_uri(), "relu_to_gelu", "pass"]
    # the module's lens is still there
    assert any(title.startswith("fxls: traced") for title in lenses)

    # hover on the pass line that created `gelu`: the node, in the graph after the pass
    text = await _hover(client, path, _inside(PASSES, "gm.graph.call_function(torch.nn.f", 9))
    for expected in ("**gelu**", "call_function", "`torch.gelu`", "`(%lin,)`", "`output`",
                     "in the graph of `Net` (after `relu_to_gelu`)"):
        assert expected in text, (expected, text)
    # the line that rewired the output
    text = await _hover(client, path, _inside(PASSES, "node.replace_all_uses_with(new)", 6))
    assert "**output**" in text and "`(%gelu,)`" in text, text
    # the pass's name: what it did to each graph
    text = await _hover(client, path, _inside(PASSES, "relu_to_gelu"))
    assert "**relu_to_gelu**" in text and "added `gelu`" in text and "removed `relu`" in text

    # the lens's command: the before/after view
    view = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=gelu.command.command, arguments=gelu.command.arguments))
    assert view["format"] == "pass" and view["name"] == "relu_to_gelu"
    (run,) = view["runs"]
    assert run["graph"] == "Net" and run["added"] == ["gelu"] and run["removed"] == ["relu"]
    assert "-    relu = torch.relu(lin);  lin = None" in run["diff"]
    assert "+    gelu = torch._C._nn.gelu(lin);  lin = None" in run["diff"]
    assert "+    gelu = torch._C._nn.gelu(lin);  lin = None\n" in view["text"]
    # a pass's name with the default format gives the same view
    again = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.showGraph", arguments=[path.as_uri(), "relu_to_gelu"]))
    assert again == view
    with pytest.raises(Exception, match="no pass Net"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fxls.showGraph", arguments=[path.as_uri(), "Net", "pass"]))


async def test_a_pass_without_models_says_it_ran_on_representative_graphs(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "only_a_pass.py"
    await _open(client, path, ONLY_A_PASS)
    (lens,) = (await _lenses(client, path)).values()
    assert lens.command.title.startswith("relu_to_gelu — on representative graphs: "), lens
    assert "ConvBnReLU +1 -1, 1 rewired" in lens.command.title
    assert "(representative)" not in lens.command.title
    text = await _hover(client, path, _inside(ONLY_A_PASS, "gm.graph.call_function(", 9))
    assert "in the graph of `ConvBnReLU` (after `relu_to_gelu`)" in text, text


# -- the lens title and the text view, without a server ------------------------------------

def _run(graph: str, added: int = 0, problem: str | None = None) -> PassGraphRun:
    return PassGraphRun(graph, [f"n{i}" for i in range(added)], problem=problem,
                        before="def forward(self, x):\n    return x\n",
                        after="def forward(self, x):\n    return x\n")


def test_lens_title_puts_problems_first_groups_unchanged_graphs_and_caps_its_length() -> None:
    report = PassReport("p", "graph_module", runs=[
        _run("A", 1), _run("B"), _run("C", problem="node `x` uses `y` before it is defined: "
                                      "the graph is not in topological order (in the graph "
                                      "of `C`)"),
        _run("D"), _run("E", 2), _run("F", 3), _run("G", 4)])
    assert lens_title(report) == (
        "p — C: node `x` uses `y` before it is defined · A: +1 -0 · E: +2 -0 · F: +3 -0 "
        "· +2 more")
    assert lens_title(PassReport("p", "module")) == "p — not run: no graph to run it on"
    pm = PassReport("p", "graph", runs=[_run("Big"), _run("Small")], graphs_from="pass_models")
    assert lens_title(pm) == "p — on pass_models: Big, Small: no change"


def test_short_problem_keeps_short_messages_and_cuts_long_ones() -> None:
    assert short_problem("`p` raised KeyError: 'x' (raised by the pass `p` on the graph of "
                         "`Net`)") == "`p` raised KeyError: 'x'"
    long = "x" * 100
    assert short_problem(long) == "x" * 59 + "…"


def test_the_text_view_diffs_changed_graphs_and_names_unchanged_ones() -> None:
    changed = PassGraphRun("Net (representative)", ["neg"], [], ["output"],
                           before="\n\ndef forward(self, x):\n    return x\n    ",
                           after="def forward(self, x):\n    neg = -x\n    return neg\n")
    report = PassReport("negate", "graph_module", runs=[changed, _run("MLP (representative)")],
                        graphs_from="representative")
    assert pass_text(report).splitlines() == [
        "# negate (graph_module): before -> after",
        "# the file has no model to run it on: it ran on representative graphs",
        "",
        "--- Net (before)",
        "+++ Net (after `negate`)",
        "# added: neg",
        "# rewired: output",
        " def forward(self, x):",
        "-    return x",
        "+    neg = -x",
        "+    return neg",
        "",
        "# MLP: no change",
    ]


async def test_the_pass_view_payload_carries_the_graphs_before_and_after(
    client: LanguageClient, tmp_path: Path
) -> None:
    """What VS Code's webview draws (``document``: the graph view's before/after of each
    run) and what Neovim's :FxlsGraph opens (the format ``html``: the page)."""
    path = tmp_path / "passes.py"
    diagnostics = await _open(client, path, PASSES)
    (fx005,) = [d for d in diagnostics if d.code == "FX005"]
    view = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.showGraph", arguments=[path.as_uri(), "negate_after_relu", "pass"]))
    document = view["document"]
    assert document["kind"] == "pass" and document["name"] == "negate_after_relu"
    assert document["status"] == "problem" and document["span"]["file"] == str(path)
    (run,) = document["runs"]
    before = {n["name"]: n for n in run["before"]["nodes"]}
    after = {n["name"]: n for n in run["after"]["nodes"]}
    assert set(before) == {"x", "lin", "relu", "output"}
    assert after["neg"]["mark"] == "added" and after["output"]["mark"] == "rewired"
    assert before["output"]["mark"] == "rewired" and after["lin"]["mark"] is None
    # the node's span is the pass line that made it: a click there opens that line
    assert after["neg"]["span"]["line"] == fx005.range.start.line + 1
    assert after["lin"]["module_path"] == "lin"
    # the pass's FX005, on the node it concerns
    (problem,) = run["after"]["problems"]
    assert problem["code"] == "FX005" and problem["nodes"] == ["neg"]
    assert problem["span"]["line"] == fx005.range.start.line + 1
    assert "+    neg = torch.neg(relu);  relu = None" in run["diff"]
    # the page for Neovim (the same document, with the graph view's script)
    page = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.showGraph", arguments=[path.as_uri(), "negate_after_relu", "html"]))
    assert page["format"] == "html" and page["status"] == "problem"
    assert page["text"].startswith("<!DOCTYPE html>")
    assert '"kind":"pass"' in page["text"] and "fxls-graph-data" in page["text"]
