"""The editors' status item says which tracers a document was analysed for, and why: the
server sends them with ``fxls/analysisDone`` (``targets``, ``targetsBecause``), from the
complete report of that version. And in a compile-only project the editor gets the graph
break, at its expression with torch's page for its GB type, and no symbolic-trace code."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from fxls.server.scheduler import ANALYSIS_DONE
from tests.lsp_client import accept_registrations, serve_config

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


@pytest_lsp.fixture(config=serve_config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    """A VS Code session that keeps each ``fxls/analysisDone``'s params by (uri, version)."""
    lsp_client.done = {}  # type: ignore[attr-defined]

    @lsp_client.feature(ANALYSIS_DONE)
    def _analysis_done(params: Any) -> None:
        lsp_client.done[(params.uri, params.version)] = params  # type: ignore[attr-defined]

    accept_registrations(lsp_client)
    for refresh in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLAY_HINT_REFRESH):
        lsp_client.feature(refresh)(lambda _params: None)
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=tmp_path.as_uri(),
        initialization_options={"fxls": {"trace": {"timeout": 120}}},
    ))
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str) -> tuple[Any, list[Any]]:
    """Open ``text`` as ``path``; the analysisDone params and diagnostics of its version 1."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, text)))
    done: dict[tuple[str, int], Any] = client.done  # type: ignore[attr-defined]
    while (uri, 1) not in done:
        await asyncio.sleep(0.01)
    return done[(uri, 1)], list(client.diagnostics.get(uri, []))


def _range(text: str, needle: str) -> types.Range:
    before, _, _ = text.partition(needle)
    line = before.count("\n")
    col = len(before) - (before.rfind("\n") + 1)
    return types.Range(types.Position(line, col), types.Position(line, col + len(needle)))


async def test_a_compile_only_project_its_targets_and_its_graph_break(
    client: LanguageClient, tmp_path: Path
):
    (tmp_path / "compiled").mkdir()
    (tmp_path / "compiled" / "pyproject.toml").write_text(COMPILE_ONLY, encoding="utf-8")
    text = TALKY.format(pragma="")
    status, diagnostics = await _open(client, tmp_path / "compiled" / "talky.py", text)

    assert status.targets == ["compile"]
    assert status.targetsBecause == "from the settings"
    [graph_break] = diagnostics
    assert graph_break.code == "FX301"
    assert graph_break.range == _range(text, 'print("hidden", h.shape)')
    assert graph_break.severity == types.DiagnosticSeverity.Warning
    assert "(GB0059)" in graph_break.message
    assert graph_break.code_description.href.startswith(
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059")


async def test_a_class_pragma_adds_its_targets_to_the_files(
    client: LanguageClient, tmp_path: Path
):
    text = TALKY.format(pragma="# fxls: targets compile")
    status, diagnostics = await _open(client, tmp_path / "pragma" / "talky.py", text)

    assert status.targets == ["symbolic_trace", "compile"]
    assert status.targetsBecause.startswith("the default: ")
    assert status.targetsBecause.endswith("; Talky: compile (its pragma)")
    assert [d.code for d in diagnostics] == ["FX301"]


async def test_the_default_is_symbolic_tracing_and_says_so(
    client: LanguageClient, tmp_path: Path
):
    status, diagnostics = await _open(client, tmp_path / "plain" / "talky.py",
                                      TALKY.format(pragma=""))

    assert status.targets == ["symbolic_trace"]
    assert status.targetsBecause.startswith("the default: nothing in the project calls")
    assert {d.code for d in diagnostics} >= {"FX013", "FX002"}
