"""The editors' status item says which tracers a document was analysed for, and why: the
server sends them with ``fxls/analysisDone`` (``targets``, ``targetsBecause``), from the
complete report of that version. And in a compile-only project the editor gets the graph
break, at its expression with torch's page for its GB type, and no symbolic-trace code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, on_the_module_server, serve_config, wait_for_version

TALKY = """\
import torch
import torch.nn as nn


class Talky(nn.Module):
    {pragma}
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        print("hidden", h.shape)
        for row in x:
            h = h + row
        return h.relu()
"""
COMPILE_ONLY = '[tool.fxls]\ntargets = ["compile"]\n'


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def module_client(lsp_client: LanguageClient, module_workspace: Path):
    """The module's VS Code session (each test in its ``own_folder``), with a trace timeout
    for a busy machine."""
    async with editor_session(lsp_client, root=module_workspace, timeout=120):
        yield


async def _open(client: LanguageClient, path: Path, text: str) -> tuple[Any, list[Any]]:
    """Open ``text`` as ``path``; the analysisDone params and diagnostics of its version 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, text)))
    diagnostics = await wait_for_version(client, uri, 1)
    return client.fxls_done_params[(uri, 1)], diagnostics  # type: ignore[attr-defined]


def _range(text: str, needle: str) -> types.Range:
    before, _, _ = text.partition(needle)
    line = before.count("\n")
    col = len(before) - (before.rfind("\n") + 1)
    return types.Range(types.Position(line, col), types.Position(line, col + len(needle)))


@on_the_module_server
async def test_a_compile_only_project_its_targets_and_its_graph_break(
    module_client: LanguageClient, own_folder: Path
):
    (own_folder / "compiled").mkdir()
    (own_folder / "compiled" / "pyproject.toml").write_text(COMPILE_ONLY, encoding="utf-8")
    text = TALKY.format(pragma="")
    status, diagnostics = await _open(module_client, own_folder / "compiled" / "talky.py", text)

    assert status.targets == ["compile"]
    assert status.targetsBecause == "from the settings"
    [graph_break] = diagnostics
    assert graph_break.code == "FX301"
    assert graph_break.range == _range(text, 'print("hidden", h.shape)')
    assert graph_break.severity == types.DiagnosticSeverity.Warning
    assert "(GB0059)" in graph_break.message
    assert graph_break.code_description.href.startswith(
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059")


@on_the_module_server
async def test_a_class_pragma_adds_its_targets_to_the_files(
    module_client: LanguageClient, own_folder: Path
):
    text = TALKY.format(pragma="# fxls: targets compile")
    status, diagnostics = await _open(module_client, own_folder / "pragma" / "talky.py", text)

    assert status.targets == ["symbolic_trace", "compile"]
    assert status.targetsBecause.startswith("the default: ")
    assert status.targetsBecause.endswith("; Talky: compile (its pragma)")
    assert [d.code for d in diagnostics] == ["FX301"]


@on_the_module_server
async def test_the_default_is_symbolic_tracing_and_says_so(
    module_client: LanguageClient, own_folder: Path
):
    status, diagnostics = await _open(module_client, own_folder / "plain" / "talky.py",
                                      TALKY.format(pragma=""))

    assert status.targets == ["symbolic_trace"]
    assert status.targetsBecause.startswith("the default: nothing in the project calls")
    assert {d.code for d in diagnostics} >= {"FX013", "FX002"}
