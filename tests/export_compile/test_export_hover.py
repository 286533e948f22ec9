"""Hover and inlay hints from the graphs torch's own tiers made (issue 35): with export
targeted, an expression's hover lists the ATen nodes it produced in the exported program,
with their shapes (symbolic sizes as their symbols); a line where dynamo broke the graph says
so (which subgraph ends there, torch's reason); an assignment symbolic tracing gave no shape
gets the exported program's. Real client, real server, real worker; compared with
``torch.export`` and ``torch._dynamo.explain`` run here, in the test process, on the same
classes."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
import torch
import torch._dynamo
from lsprotocol import types
from pytest_lsp import LanguageClient
from torch.export import Dim

from tests.lsp_client import editor_session, on_the_module_server, open_and_wait, serve_config

CASE = """import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        return self.fc(x).relu()


# fxls: args (torch.randn(4, 8),)
# fxls: dynamic {"x": {0: "batch"}}
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = Mlp()
        self.proj = nn.Linear(16, 8)

    def forward(self, x):
        h = self.mlp(x)
        y = h * 2 + torch.sigmoid(h)
        return self.proj(y).sum(-1)


# fxls: args (torch.randn(4, 8),)
class Printing(nn.Module):
    def forward(self, x):
        x = x + 1
        print("shape", x.shape)
        return x.relu()


# fxls: args (torch.randn(4, 8),)
class Halves(nn.Module):
    def forward(self, x):
        pairs = x.reshape(int(x.numel() / 2), 2)
        return pairs * 2
"""
ROWS = CASE.splitlines()
TARGETED = {"fxls": {"trace": {"timeout": 120}, "targets": ["export", "compile"]}}


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def targeted_client(lsp_client: LanguageClient,
                          tmp_path_factory: pytest.TempPathFactory):
    """One server for this module, its editor asking for export and compile."""
    root = tmp_path_factory.mktemp("export-hover")
    async with editor_session(lsp_client, root=root, options=TARGETED):
        lsp_client.workspace_root = root  # type: ignore[attr-defined]
        yield


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def case(targeted_client: LanguageClient) -> AsyncIterator[Path]:
    """The case file, opened and analysed once (every tier) for all the tests here."""
    path = targeted_client.workspace_root / "model.py"  # type: ignore[attr-defined]
    path.write_text(CASE, encoding="utf-8")
    await open_and_wait(targeted_client, path, CASE)
    yield path


@pytest.fixture(scope="module")
def case_module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The case file imported here, for torch itself."""
    path = tmp_path_factory.mktemp("export-hover-reference") / "reference_model.py"
    path.write_text(CASE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("reference_model", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def exported_net(case_module: ModuleType) -> Any:
    return torch.export.export(case_module.Net(), (torch.randn(4, 8),),
                               dynamic_shapes={"x": {0: Dim("batch")}})


def _row(text: str) -> int:
    return next(number for number, row in enumerate(ROWS) if text in row)


def _torch_lines(program: Any, filename: str) -> dict[int, dict[str, tuple[str, str]]]:
    """torch's ATen nodes by the (0-based) line of the case file their stack ends at: name ->
    (target, sizes joined by the multiplication sign)."""
    by_line: dict[int, dict[str, tuple[str, str]]] = {}
    for node in program.graph_module.graph.nodes:
        lines = [int(line) for file, line in re.findall(
            r'File "([^"]+)", line (\d+)', node.meta.get("stack_trace") or "")
            if file.endswith(filename)]
        if node.op == "call_function" and lines:
            sizes = "\u00d7".join(str(size) for size in node.meta["val"].shape)
            by_line.setdefault(lines[-1] - 1, {})[node.name] = (str(node.target), sizes)
    return by_line


_LISTED = re.compile(r"^- `(\w+) = ([\w.]+)\(.*?` · `([^`]*)` (\w+)$", re.MULTILINE)


async def _exported(client: LanguageClient, path: Path, line: int, character: int,
                    module: str = "Net") -> dict[str, tuple[str, str]]:
    """The ATen nodes the hover at (line, character) lists for ``module``'s program."""
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(path.as_uri()), types.Position(line, character)))
    text = hover.contents.value if hover is not None else ""  # type: ignore[union-attr]
    sections = [section for section in text.split("\n\n---\n\n")
                if section.startswith("**export**") and f"of `{module}`" in section]
    return {name: (target, sizes) for section in sections
            for name, target, sizes, _dtype in _LISTED.findall(section)}


@on_the_module_server
async def test_each_line_lists_the_aten_nodes_torch_exported_from_it(
        targeted_client: LanguageClient, case: Path, exported_net: Any) -> None:
    """Hovered at every column of each line of ``Net``'s forward (and of the ``Mlp`` it
    calls), the nodes listed for ``Net`` are, together, exactly torch's for that line, with
    torch's targets and sizes; the batch dimension declared dynamic is its symbol. The
    line that calls ``Mlp`` made none itself: its nodes are ``Mlp``'s line's."""
    expected = _torch_lines(exported_net, "reference_model.py")
    lines = [_row("return self.fc(x).relu()"), _row("h = self.mlp(x)"),
             _row("y = h * 2 + torch.sigmoid(h)"), _row("return self.proj(y).sum(-1)")]
    assert set(expected) == set(lines) - {_row("h = self.mlp(x)")}
    for line in lines:
        listed: dict[str, tuple[str, str]] = {}
        for character in range(len(ROWS[line]) + 1):
            listed |= await _exported(targeted_client, case, line, character)
        assert listed == expected.get(line, {}), ROWS[line]
    sizes = {size for nodes in expected.values() for _, size in nodes.values()}
    assert all(re.fullmatch(r"s\d+\u00d7\d+|s\d+", size) for size in sizes), sizes


@on_the_module_server
async def test_an_expression_lists_only_its_own_nodes(
        targeted_client: LanguageClient, case: Path, exported_net: Any) -> None:
    """On ``y = h * 2 + torch.sigmoid(h)``, each column of ``torch.sigmoid(h)`` lists its
    node alone, those of ``h * 2`` the multiplication, the ``+`` the addition."""
    line = _row("y = h * 2 + torch.sigmoid(h)")
    row, torch_nodes = ROWS[line], _torch_lines(exported_net, "reference_model.py")[line]
    by_target = {target: name for name, (target, _) in torch_nodes.items()}
    for text, target in (("torch.sigmoid(h)", "aten.sigmoid.default"),
                         ("h * 2", "aten.mul.Tensor")):
        start = row.index(text)
        for character in range(start, start + len(text) + 1):
            listed = await _exported(targeted_client, case, line, character)
            assert list(listed) == [by_target[target]], (text, character)
    plus = row.index(" + ") + 1
    assert list(await _exported(targeted_client, case, line, plus)) == [
        by_target["aten.add.Tensor"]]
    assert await _exported(targeted_client, case, line, row.index("y =")) == {}


@on_the_module_server
async def test_a_graph_break_line_says_which_subgraph_ends_there(
        targeted_client: LanguageClient, case: Path, case_module: ModuleType) -> None:
    explained = torch._dynamo.explain(case_module.Printing())(torch.randn(4, 8))
    (reason,) = explained.break_reasons
    assert reason.user_stack[-1].lineno - 1 == _row('print("shape", x.shape)')
    line = _row('print("shape", x.shape)')
    hover = await targeted_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(case.as_uri()), types.Position(line, 10)))
    assert hover is not None
    text = hover.contents.value  # type: ignore[union-attr]
    said = (f"**graph break** · compile · `Printing`: subgraph 1 of {explained.graph_count} "
            "ends here, dynamo resumes in subgraph 2: ")
    assert said in text
    assert reason.reason.strip().splitlines()[0] in text  # torch's kind of break
    before = await targeted_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(case.as_uri()), types.Position(line - 1, 10)))
    assert before is None or "graph break" not in before.contents.value  # type: ignore


@on_the_module_server
async def test_an_assignment_without_a_traced_shape_gets_the_exported_one(
        targeted_client: LanguageClient, case: Path, case_module: ModuleType) -> None:
    """``int(...)`` of a traced value leaves symbolic tracing's ``Halves`` a graph that
    cannot run on its inputs (no shapes); the exported program has the reshape's."""
    program = torch.export.export(case_module.Halves(), (torch.randn(4, 8),))
    (reshaped,) = [node for node in program.graph_module.graph.nodes
                   if "reshape" in str(node.target) or "view" in str(node.target)]
    line = _row("pairs = x.reshape(")
    hints = await targeted_client.text_document_inlay_hint_async(types.InlayHintParams(
        types.TextDocumentIdentifier(case.as_uri()),
        types.Range(types.Position(line, 0), types.Position(line + 1, 0))))
    assert [(hint.position, hint.label) for hint in hints or []] == [
        (types.Position(line, ROWS[line].index("pairs") + 5),
         f": [{', '.join(str(size) for size in reshaped.meta['val'].shape)}]")]


@on_the_module_server
async def test_the_graph_command_gives_the_export_graph_of_the_same_module(
        targeted_client: LanguageClient, case: Path, exported_net: Any) -> None:
    """``fxls.showGraph [uri, "Net", "json", "export"]``: what the editor's graph view shows
    when switched from the FX graph to the exported program; torch's nodes, by name."""
    answer = await targeted_client.workspace_execute_command_async(types.ExecuteCommandParams(
        "fxls.showGraph", [case.as_uri(), "Net", "json", "export"]))
    document = json.loads(answer["text"])
    assert (answer["target"], document["target"]) == ("export", "export")
    assert [node["name"] for node in document["nodes"]] == [
        node.name for node in exported_net.graph_module.graph.nodes]
    fx = await targeted_client.workspace_execute_command_async(types.ExecuteCommandParams(
        "fxls.showGraph", [case.as_uri(), "Net", "json"]))
    assert "target" not in fx and "target" not in json.loads(fx["text"])


@on_the_module_server
async def test_the_compile_graph_is_dynamos_subgraphs_with_each_break_where_it_ended(
        targeted_client: LanguageClient, case: Path, case_module: ModuleType) -> None:
    """``fxls.showGraph [uri, "Printing", "json", "compile"]``: each subgraph dynamo made is
    a group holding torch's nodes in torch's order; each break an FX301 on the output of the
    subgraph it ended (at the break's line), an edge from it into the next subgraph."""
    answer = await targeted_client.workspace_execute_command_async(types.ExecuteCommandParams(
        "fxls.showGraph", [case.as_uri(), "Printing", "json", "compile"]))
    document = json.loads(answer["text"])
    explained = torch._dynamo.explain(case_module.Printing())(torch.randn(4, 8))
    count = explained.graph_count
    assert [group["path"] for group in document["groups"]] == [
        f"subgraph_{number}" for number in range(1, count + 1)]
    for number, graph in enumerate(explained.graphs, 1):
        ours = [node["target"].rsplit(".", 1)[-1] for node in document["nodes"]
                if node["name"].endswith(f"@{number}")]
        assert ours == [node.target if isinstance(node.target, str) else node.target.__name__
                        for node in graph.graph.nodes]
    lines = [reason.user_stack[-1].lineno for reason in explained.break_reasons]
    assert [(problem["code"], problem["span"]["line"], problem["nodes"])
            for problem in document["problems"]] == [
        ("FX301", line, [f"output@{number}"]) for number, line in enumerate(lines, 1)]
    for number, line in enumerate(lines[:count - 1], 1):
        ended = next(node for node in document["nodes"] if node["name"] == f"output@{number}")
        resumed = next(node for node in document["nodes"]
                       if node["name"].endswith(f"@{number + 1}"))
        assert (ended["users"][-1], ended["line"]) == (resumed["name"], line)
