"""End to end: real client, real ``fxls serve``, real worker tracing real models."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import on_the_module_server, open_and_wait, save_and_wait, send_save

GATED = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:  # 门控 😀
            h = h.relu()
        return h
"""

CLEAN = GATED.replace(
    "        if h.sum() > 0:  # 门控 😀\n            h = h.relu()\n", "        h = h.relu()\n"
)


def _ranges(diagnostics: list[types.Diagnostic], code: str) -> list[tuple[int, int, int, int]]:
    return [
        (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
        if d.code == code
    ]


@on_the_module_server
async def test_open_publishes_fx001_on_the_condition(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    path.write_text(GATED, encoding="utf-8")
    diagnostics = await open_and_wait(module_client, path, GATED)
    assert _ranges(diagnostics, "FX001") == [(11, 11, 11, 22)]
    (fx001,) = [d for d in diagnostics if d.code == "FX001"]
    assert fx001.severity == types.DiagnosticSeverity.Error
    assert fx001.code_description is not None and "#fx001" in fx001.code_description.href


@on_the_module_server
async def test_save_republishes_for_the_new_text(module_client: LanguageClient, own_folder: Path):
    path = own_folder / "gate.py"
    path.write_text(GATED, encoding="utf-8")
    await open_and_wait(module_client, path, GATED)
    diagnostics = await save_and_wait(module_client, path, CLEAN, 2)
    assert _ranges(diagnostics, "FX001") == []


@on_the_module_server
async def test_quick_saves_end_with_the_final_texts_diagnostics(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    path.write_text(GATED, encoding="utf-8")
    await open_and_wait(module_client, path, GATED)
    for version in range(2, 21):
        send_save(module_client, path, CLEAN if version % 2 else GATED, version)
    final = await save_and_wait(module_client, path, CLEAN, 21)
    assert _ranges(final, "FX001") == []


@on_the_module_server
async def test_hover_shows_the_node_an_expression_produced(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    path.write_text(CLEAN, encoding="utf-8")
    await open_and_wait(module_client, path, CLEAN)
    hover = await module_client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(10, 14))
    )
    assert hover is not None
    text = hover.contents.value
    assert "call_module" in text and "torch.nn" in text and "Linear" in text


@on_the_module_server
async def test_code_lens_and_show_graph(module_client: LanguageClient, own_folder: Path):
    path = own_folder / "gate.py"
    path.write_text(CLEAN, encoding="utf-8")
    await open_and_wait(module_client, path, CLEAN)
    lenses = await module_client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(path.as_uri()))
    )
    assert len(lenses) == 1 and lenses[0].command.title.startswith("fxls: traced")
    result = await module_client.workspace_execute_command_async(
        types.ExecuteCommandParams("fxls.showGraph", [path.as_uri(), "Gate", "code"])
    )
    assert "def forward(self, x)" in result["text"]


@on_the_module_server
async def test_show_graph_json_is_the_graph_views_document(
    module_client: LanguageClient, own_folder: Path
):
    """What the VS Code graph view draws: nodes with module path and source, the module's
    problems with the nodes where tracing went wrong."""
    path = own_folder / "gate.py"
    path.write_text(GATED, encoding="utf-8")
    await open_and_wait(module_client, path, GATED)
    result = await module_client.workspace_execute_command_async(
        types.ExecuteCommandParams("fxls.showGraph", [path.as_uri(), "Gate", "json"])
    )
    document = json.loads(result["text"])
    assert document["status"] == "partial" and "def forward" in document["code"]
    nodes = {n["name"]: n for n in document["nodes"]}
    assert nodes["fc"]["module_path"] == "fc" and nodes["fc"]["line"] == 11
    assert nodes["fc"]["file"] == str(path)
    (problem,) = document["problems"]
    assert problem["code"] == "FX001" and problem["span"]["line"] == 12
    assert {nodes[name]["target"] for name in problem["nodes"]} == {"sum", "operator.gt"}


@on_the_module_server
async def test_bad_requests_are_answered_and_the_server_lives(
    module_client: LanguageClient, own_folder: Path
):
    unknown = types.TextDocumentIdentifier((own_folder / "nope.py").as_uri())
    assert (
        await module_client.text_document_hover_async(
            types.HoverParams(unknown, types.Position(999, 999)))
        is None
    )
    path = own_folder / "gate.py"
    path.write_text(CLEAN, encoding="utf-8")
    await open_and_wait(module_client, path, CLEAN)
    far = await module_client.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(path.as_uri()), types.Position(500, 80))
    )
    assert far is None
    diagnostics = await save_and_wait(module_client, path, GATED, 2)
    assert _ranges(diagnostics, "FX001") == [(11, 11, 11, 22)]
