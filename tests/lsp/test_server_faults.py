"""The server never loses track: each fault of issue 11 as an end-to-end test (pytest-lsp
client, real ``fxls serve``, real worker)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, on_the_module_server, serve_config
from tests.lsp_client import open_and_wait as open_and_wait_forever

MODEL = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h.relu()
        return h
"""

#: construction takes a while: the analysis is still running when the client asks
SLOW = MODEL.replace("        super().__init__()\n",
                     "        super().__init__()\n        import time; time.sleep(2)\n")
#: traces completely (shapes for inlay hints), slowly
SLOW_CLEAN = SLOW.replace("        if h.sum() > 0:\n            h = h.relu()\n",
                          "        h = h.relu()\n")


async def open_and_wait(
    client: LanguageClient, path: Path, text: str
) -> list[types.Diagnostic]:
    async with asyncio.timeout(120):
        return await open_and_wait_forever(client, path, text)


def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> None:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(path.as_uri(), "python", version, text)))


@on_the_module_server
async def test_requests_during_the_first_analysis_wait_for_its_report(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    _open(module_client, path, SLOW_CLEAN)
    document = types.TextDocumentIdentifier(path.as_uri())
    hover, lenses, hints = await asyncio.gather(
        module_client.text_document_hover_async(
            types.HoverParams(document, types.Position(11, 14))),
        module_client.text_document_code_lens_async(types.CodeLensParams(document)),
        module_client.text_document_inlay_hint_async(types.InlayHintParams(
            document, types.Range(types.Position(0, 0), types.Position(14, 0)))),
    )
    assert hover is not None and "Linear" in hover.contents.value
    assert len(lenses) == 1 and lenses[0].command.title.startswith("fxls: traced")
    assert [hint.position.line for hint in hints] == [11, 12]


@on_the_module_server
async def test_hover_after_a_save_answers_from_the_new_report(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(module_client, path, MODEL)
    moved = SLOW.replace("        h = self.fc(x)\n", "        y = 1\n        h = self.fc(x)\n")
    path.write_text(moved, encoding="utf-8")
    module_client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=path.as_uri()),
        [types.TextDocumentContentChangeWholeDocument(moved)]))
    module_client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
    hover = await module_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(path.as_uri()), types.Position(12, 14)))
    assert hover is not None and "Linear" in hover.contents.value


@on_the_module_server
async def test_close_during_an_analysis_publishes_nothing_for_the_closed_document(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "gate.py"
    _open(module_client, path, SLOW)
    await asyncio.sleep(0.5)
    module_client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
    other = own_folder / "other.py"
    await open_and_wait(module_client, other, SLOW)  # the worker has long finished the first job
    await asyncio.sleep(1.0)
    assert list(module_client.diagnostics.get(path.as_uri(), [])) == []


@on_the_module_server
async def test_save_of_a_never_opened_document_analyses_nothing(
    module_client: LanguageClient, own_folder: Path
):
    marker = own_folder / "ran.txt"
    path = own_folder / "never_opened.py"
    path.write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + MODEL, encoding="utf-8")
    module_client.text_document_did_save(
        types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
    await open_and_wait(module_client, own_folder / "gate.py", MODEL)
    assert not marker.exists()
    assert path.as_uri() not in module_client.diagnostics


async def test_bad_settings_are_said_once_and_the_default_is_used(
    client: LanguageClient, tmp_path: Path
):
    for number, bad in enumerate((float("inf"), float("nan"), -1, 1e-9)):
        client.messages.clear()
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"fxls": {"trace": {"timeout": bad}}}))
        path = tmp_path / f"gate{number}.py"
        path.write_text(MODEL, encoding="utf-8")
        diagnostics = await open_and_wait(client, path, MODEL)
        assert [d.code for d in diagnostics] == ["FX001"], (bad, diagnostics)
        shown = [m.message for m in client.messages if "timeout" in m.message]
        assert len(shown) == 1 and "using the default 30.0" in shown[0], (bad, client.messages)


@on_the_module_server
async def test_bad_pyproject_settings_are_said_and_the_default_is_used(
    module_client: LanguageClient, own_folder: Path
):
    (own_folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = -1\n", encoding="utf-8")
    path = own_folder / "gate.py"
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(module_client, path, MODEL)
    assert [d.code for d in diagnostics] == ["FX001"]
    assert any("`timeout`" in m.message and "-1" in m.message for m in module_client.messages)


@pytest_lsp.fixture(config=serve_config())
async def bad_python_client(lsp_client: LanguageClient, tmp_path: Path):
    options = {"fxls": {"python": str(tmp_path / "no" / "python")}}
    async with editor_session(lsp_client, root=tmp_path, options=options):
        yield


async def test_a_worker_that_cannot_start_is_fx102_and_a_message(
    bad_python_client: LanguageClient, tmp_path: Path
):
    client = bad_python_client
    path = tmp_path / "gate.py"
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(client, path, MODEL)
    assert [(d.code, d.range.start.line, d.range.start.character, d.range.end.line,
             d.range.end.character) for d in diagnostics] == [("FX102", 0, 0, 0, 12)]
    assert "no/python" in diagnostics[0].message
    shown = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(shown) == 1 and "no/python" in shown[0].message
    second = tmp_path / "second.py"
    second.write_text(MODEL, encoding="utf-8")
    assert [d.code for d in await open_and_wait(client, second, MODEL)] == ["FX102"]
    assert len([m for m in client.messages if m.type == types.MessageType.Error]) == 1
