"""End to end, the rest of the server: hover details, inlay shape hints, settings, on-change
tracing, worker restart and a killed worker — real client, real server, real worker."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxls.worker.procfs import child_pids
from tests.lsp_client import (
    on_the_module_server,
    open_and_wait,
    record_publishes,
    save_and_wait,
    wait_for_version,
)

MODEL = """import torch
from torch import nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        y = F.gelu(h)
        unused = h * 2
        return y
"""


def _position(text: str, needle: str, offset: int = 0) -> types.Position:
    index = text.index(needle) + offset
    before = text[:index]
    return types.Position(before.count("\n"), index - (before.rfind("\n") + 1))


@on_the_module_server
async def test_hover_names_node_target_shape_users_module_and_backward(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(module_client, path, MODEL)
    doc = types.TextDocumentIdentifier(path.as_uri())
    hover = await module_client.text_document_hover_async(
        types.HoverParams(doc, _position(MODEL, "F.gelu(h)", 2))
    )
    text = hover.contents.value
    for expected in ("call_function", "torch.nn.functional.gelu", "gelu", "[2, 4]",
                     "float32", "GeluBackward0", "fc"):
        assert expected in text, (expected, text)
    hover = await module_client.text_document_hover_async(
        types.HoverParams(doc, _position(MODEL, "self.fc(x)", 6))
    )
    text = hover.contents.value
    for expected in ("call_module", "torch.nn.modules.linear.Linear", "36", "AddmmBackward0"):
        assert expected in text, (expected, text)
    hover = await module_client.text_document_hover_async(
        types.HoverParams(doc, _position(MODEL, "class Head", 7))
    )
    assert "traced" in hover.contents.value and "nodes" in hover.contents.value


async def test_inlay_hints_show_shapes_and_follow_the_setting(
    client: LanguageClient, tmp_path: Path
):
    path = tmp_path / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(client, path, MODEL)
    params = types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(path.as_uri()),
        range=types.Range(types.Position(0, 0), types.Position(20, 0)),
    )
    hints = await client.text_document_inlay_hint_async(params)
    labels = {h.position.line: str(h.label) for h in hints}
    assert "[2, 4]" in labels[_position(MODEL, "h = self.fc").line]
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxls": {"inlayHints": {"shapes": False}}})
    )
    await asyncio.sleep(0.3)
    assert not await client.text_document_inlay_hint_async(params)


async def test_select_setting_filters_diagnostics(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(client, path, MODEL)
    assert {d.code for d in diagnostics} == {"FX010"}
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"fxls": {"diagnostics": {"ignore": ["FX010"]}}}
        )
    )
    await asyncio.sleep(0.3)
    diagnostics = await save_and_wait(client, path, MODEL, 2)
    assert diagnostics == []


async def test_on_change_traces_unsaved_text_after_a_pause(
    client: LanguageClient, tmp_path: Path
):
    path = tmp_path / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(client, path, MODEL)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"fxls": {"trace": {"onChange": True, "onChangeDelay": 100}}}
        )
    )
    await asyncio.sleep(0.3)
    uri = path.as_uri()
    edited = MODEL.replace("        unused = h * 2\n", "")
    for version, text in ((2, MODEL + "\n"), (3, edited)):  # typed quickly: only 3 counts
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [types.TextDocumentContentChangeWholeDocument(text)],
            )
        )
    diagnostics = await wait_for_version(client, uri, 3)
    assert diagnostics == []


async def test_restart_command_and_a_killed_worker_leave_the_server_working(
    client: LanguageClient, tmp_path: Path
):
    path = tmp_path / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(client, path, MODEL)
    server_pid = client._server.pid  # type: ignore[attr-defined]
    first = set(child_pids(server_pid))  # the worker
    assert first
    assert await client.workspace_execute_command_async(
        types.ExecuteCommandParams("fxls.restartWorker", [])
    )
    # changed texts: a save of the text already analysed is answered without a job
    diagnostics = await save_and_wait(client, path, MODEL + "\n", 2)
    assert {d.code for d in diagnostics} == {"FX010"}
    restarted = set(child_pids(server_pid))
    assert restarted and not restarted & first  # a new worker, not the old one still
    for worker_pid in restarted:
        os.kill(worker_pid, signal.SIGKILL)
    await asyncio.sleep(0.2)
    diagnostics = await save_and_wait(client, path, MODEL, 3)
    assert {d.code for d in diagnostics} == {"FX010"}
    replaced = set(child_pids(server_pid))
    assert replaced and not replaced & restarted


PASS = """import torch
import fxcore

graph = fxcore.Graph()
x = graph.placeholder("x")
y = graph.call_function(torch.relu, (x,))
graph.output(y)
"""


@on_the_module_server
async def test_hover_on_a_graph_pass_line(module_client: LanguageClient, own_folder: Path):
    path = own_folder / "my_pass.py"
    path.write_text(PASS, encoding="utf-8")
    await open_and_wait(module_client, path, PASS)
    hover = await module_client.text_document_hover_async(
        types.HoverParams(
            types.TextDocumentIdentifier(path.as_uri()),
            _position(PASS, "graph.call_function", 8),
        )
    )
    assert hover is not None
    assert "call_function" in hover.contents.value and "torch.relu" in hover.contents.value


async def test_malformed_and_out_of_order_requests_never_kill_the_server(
    client: LanguageClient, tmp_path: Path
):
    ghost = types.TextDocumentIdentifier((tmp_path / "never_opened.py").as_uri())
    client.text_document_did_save(types.DidSaveTextDocumentParams(ghost))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=3, uri=ghost.uri),
            [types.TextDocumentContentChangeWholeDocument("x = 1\n")],
        )
    )
    client.text_document_did_close(types.DidCloseTextDocumentParams(ghost))
    assert not await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=ghost,
            range=types.Range(types.Position(0, 0), types.Position(0, 1)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not await client.text_document_code_lens_async(types.CodeLensParams(ghost))
    for arguments in ([], ["not a uri"], [ghost.uri, "Nope", "svg"], [1, 2, 3]):
        # each bad call is answered with an error that says why; the server goes on
        with pytest.raises(Exception) as refused:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams("fxls.showGraph", arguments)
            )
        assert ("showGraph" in str(refused.value) or "traced" in str(refused.value)
                or "format" in str(refused.value)), (arguments, refused.value)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"fxls": {"trace": {"timeout": "soon"}}})
    )
    path = tmp_path / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    diagnostics = await open_and_wait(client, path, MODEL)
    assert {d.code for d in diagnostics} == {"FX010"}


@on_the_module_server
async def test_work_done_progress_wraps_each_trace(module_client: LanguageClient, own_folder: Path):
    before = set(module_client.progress_reports)  # the module's earlier tests' traces
    path = own_folder / "head.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(module_client, path, MODEL)
    kinds = [
        getattr(value, "kind", None)
        for token, values in module_client.progress_reports.items()
        if str(token).startswith("fxls-trace-") and token not in before
        for value in values
    ]
    assert kinds[:1] == ["begin"] and kinds[-1] == "end"


SLOW_EAGER = """import time

import torch
from torch import nn


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if isinstance(x, torch.Tensor):  # in the eager run (FX014's), not in the trace
            time.sleep(2)
        return self.fc(x)


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x.relu()
        return x
"""


@on_the_module_server
async def test_tracing_diagnostics_are_published_before_the_slow_eager_run(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "slow.py"
    path.write_text(SLOW_EAGER, encoding="utf-8")
    uri = path.as_uri()
    publishes = record_publishes(module_client, path)
    module_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, SLOW_EAGER)))
    while not publishes:
        await asyncio.sleep(0.01)
    early = publishes[0]
    assert early.version == 1
    assert [d.code for d in early.diagnostics] == ["FX001"]
    # the complete report is still 2 s of eager run away
    assert (uri, 1) not in module_client.fxls_done  # type: ignore[attr-defined]
    final = await wait_for_version(module_client, uri, 1)
    assert [(d.code, d.range) for d in final] == [(d.code, d.range) for d in early.diagnostics]
