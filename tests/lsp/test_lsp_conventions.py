"""End to end, on time and by LSP conventions: code actions right after a save, the
"ignore on this line" fix, cross-file diagnostics withdrawn when their file changes, watched
files, pull diagnostics, one cancellable progress with percentages, the project check."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.lsp_client import (
    editor_session,
    on_the_module_server,
    open_and_wait,
    save_and_wait,
    send_save,
    serve_config,
    wait_for_version,
)

HEAD = "import torch\nfrom torch import nn\n\n\n"
CLEAN = HEAD + (
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.proj = nn.Linear(8, 8)\n\n    def forward(self, x):\n"
    "        return x.relu()\n"
)
DEAD = CLEAN.replace("        return x.relu()\n",
                     "        unused = self.proj(x)\n        return x.relu()\n")
PRINTS = HEAD + (
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
    "        print(x.shape)\n"
    "        print(x.dtype)  # fxls: ignore[FX010]\n"
    "        print(x.device)  # shapes\n"
    "        return self.proj(x)\n"
)


def lsp_range(text: str, needle: str, occurrence: int = 0) -> types.Range:
    """The range of ``needle`` in ``text`` (ASCII text: UTF-16 and UTF-8 alike)."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)

    def position(offset: int) -> types.Position:
        before = text[:offset]
        return types.Position(before.count("\n"), offset - (before.rfind("\n") + 1))

    return types.Range(position(start), position(start + len(needle)))


def line_end(text: str, line: int) -> types.Position:
    return types.Position(line, len(text.split("\n")[line]))


async def _until(condition: Callable[[], bool], timeout_s: float = 90.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def _shown(client: LanguageClient, path: Path, code: str | None = None) -> list[Any]:
    found = list(client.diagnostics.get(path.as_uri(), []))
    return [d for d in found if code is None or d.code == code]


def _edits(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    edit = action.edit
    assert edit is not None
    if edit.document_changes:
        (change,) = edit.document_changes
        assert change.text_document.uri == uri
        return list(change.edits)
    return list(edit.changes[uri])


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        return sum(len(line) + 1 for line in lines[: position.line]) + position.character

    for item in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(item.range.start)] + item.new_text + text[offset(item.range.end):]
    return text


def _actions_params(uri: str, at: types.Range, diagnostics: list[Any] | None = None,
                    only: list[str] | None = None) -> types.CodeActionParams:
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=at,
        context=types.CodeActionContext(diagnostics=diagnostics or [], only=only))


# -- code actions right after a save ---------------------------------------------------------

@on_the_module_server
async def test_a_code_action_asked_right_after_a_save_waits_for_the_analysis_and_its_fix(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "net.py"
    path.write_text(CLEAN, encoding="utf-8")
    uri = path.as_uri()
    assert await open_and_wait(module_client, path, CLEAN) == []

    # saved, and Ctrl+. at once: the client has no diagnostic for the new text yet
    send_save(module_client, path, DEAD, 2)
    dead = lsp_range(DEAD, "unused = self.proj(x)")
    actions = await module_client.text_document_code_action_async(
        _actions_params(uri, types.Range(dead.start, dead.start)))
    assert (uri, 2) in module_client.fxls_done  # type: ignore[attr-defined]
    fixes = [a for a in actions or [] if a.kind == types.CodeActionKind.QuickFix
             and "Remove unused" in a.title]
    assert len(fixes) == 1, [a.title for a in actions or []]
    (fix,) = fixes
    assert [(d.code, d.range) for d in fix.diagnostics] == [
        ("FX010", lsp_range(DEAD, "self.proj(x)"))]
    assert _apply(DEAD, _edits(fix, uri)) == CLEAN
    # the cursor anywhere on the line, no diagnostic sent: "ignore" is offered too
    titles = [a.title for a in actions or []]
    assert "fxls: ignore FX010 on this line" in titles, titles


@on_the_module_server
async def test_fix_all_asked_right_after_a_save_waits_for_the_whole_verification(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "net.py"
    path.write_text(CLEAN, encoding="utf-8")
    uri = path.as_uri()
    await open_and_wait(module_client, path, CLEAN)
    two_dead = DEAD.replace("        return x.relu()\n",
                            "        also = x * 2\n        return x.relu()\n")
    send_save(module_client, path, two_dead, 2)
    actions = await module_client.text_document_code_action_async(_actions_params(
        uri, types.Range(types.Position(0, 0), types.Position(0, 0)),
        only=["source.fixAll"]))
    assert [a.kind for a in actions or []] == ["source.fixAll.fxls"]
    assert _apply(two_dead, _edits(actions[0], uri)) == CLEAN


# -- ignore on this line -----------------------------------------------------------------------

@on_the_module_server
async def test_ignore_on_this_line_adds_a_pragma_or_merges_with_the_one_there(
    module_client: LanguageClient, own_folder: Path
):
    path = own_folder / "prints.py"
    path.write_text(PRINTS, encoding="utf-8")
    uri = path.as_uri()
    diagnostics = await open_and_wait(module_client, path, PRINTS)
    fx013 = sorted((d for d in diagnostics if d.code == "FX013"),
                   key=lambda d: d.range.start.line)
    assert [d.range for d in fx013] == [lsp_range(PRINTS, "print(x.shape)"),
                                        lsp_range(PRINTS, "print(x.dtype)"),
                                        lsp_range(PRINTS, "print(x.device)")]
    line = fx013[0].range.start.line
    expected = {
        # a plain line: the pragma goes at its end
        0: [types.TextEdit(types.Range(line_end(PRINTS, line), line_end(PRINTS, line)),
                           "  # fxls: ignore[FX013]")],
        # a pragma there already: the code joins its list
        1: [types.TextEdit(lsp_range(PRINTS, "[FX010]"), "[FX010,FX013]")],
        # another comment there: the pragma follows it
        2: [types.TextEdit(types.Range(line_end(PRINTS, line + 2),
                                       line_end(PRINTS, line + 2)),
                           "  # fxls: ignore[FX013]")],
    }
    fixed = PRINTS
    for index, diagnostic in enumerate(fx013):
        actions = await module_client.text_document_code_action_async(
            _actions_params(uri, diagnostic.range, [diagnostic]))
        (ignore,) = [a for a in actions or [] if a.title == "fxls: ignore FX013 on this line"]
        assert ignore.kind == types.CodeActionKind.QuickFix
        assert list(ignore.diagnostics) == [diagnostic]
        assert _edits(ignore, uri) == expected[index]
        fixed = _apply(fixed, _edits(ignore, uri))
    assert "        print(x.dtype)  # fxls: ignore[FX010,FX013]\n" in fixed
    assert "        print(x.device)  # shapes  # fxls: ignore[FX013]\n" in fixed
    after = await save_and_wait(module_client, path, fixed, 2)
    assert [d for d in after if d.code == "FX013"] == []


# -- cross-file diagnostics follow the file they point into ------------------------------------

LAYERS = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, act):
        super().__init__()
        # built only by net.py (fxls cannot guess a ReLU): what layers.py shows of FX001 is
        # what net.py found in it
        if not isinstance(act, nn.ReLU):
            raise TypeError("act must be a ReLU")
        self.fc = nn.Linear(dim, dim)
        self.act = act

    def forward(self, x):
        x = self.fc(x)
        if x.sum() > 0:
            x = self.act(x)
        return x
"""
#: the same problem two lines lower (another editor or a git checkout changed the file)
LAYERS_MOVED = LAYERS.replace("class Block", "# the block\n# of the net\nclass Block")
NET = """import torch
from torch import nn

from layers import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8, nn.ReLU())

    def forward(self, x):
        return self.block(x)
"""


def _write(tmp_path: Path) -> tuple[Path, Path]:
    layers, net = tmp_path / "layers.py", tmp_path / "net.py"
    layers.write_text(LAYERS, encoding="utf-8")
    net.write_text(NET, encoding="utf-8")
    return layers, net


@on_the_module_server
async def test_opening_a_file_changed_on_disk_withdraws_and_recomputes_what_others_found_there(
    module_client: LanguageClient, own_folder: Path
):
    layers, net = _write(own_folder)
    await open_and_wait(module_client, net, NET)
    old, new = lsp_range(LAYERS, "x.sum() > 0"), lsp_range(LAYERS_MOVED, "x.sum() > 0")
    assert [d.range for d in _shown(module_client, layers, "FX001")] == [old]

    layers.write_text(LAYERS_MOVED, encoding="utf-8")  # no editor saw this
    module_client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(layers.as_uri(), "python", 1, LAYERS_MOVED)))
    # withdrawn at once (Block(dim, act) cannot be built from layers.py alone: only net.py's
    # analysis finds the FX001), then net.py is analysed again and finds it two lines lower
    await _until(lambda: _shown(module_client, layers, "FX001") == [])
    await _until(lambda: [d.range for d in _shown(module_client, layers, "FX001")] == [new])
    await wait_for_version(module_client, layers.as_uri(), 1)
    assert [d.range for d in _shown(module_client, layers, "FX001")] == [new]


@on_the_module_server
async def test_editing_a_file_withdraws_what_other_documents_found_in_its_saved_text(
    module_client: LanguageClient, own_folder: Path
):
    layers, net = _write(own_folder)
    await open_and_wait(module_client, net, NET)
    await open_and_wait(module_client, layers, LAYERS)
    assert [d.range for d in _shown(module_client, layers, "FX001")] == [
        lsp_range(LAYERS, "x.sum() > 0")]

    module_client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version=2, uri=layers.as_uri()),
        [types.TextDocumentContentChangeWholeDocument(LAYERS_MOVED)]))
    await _until(lambda: _shown(module_client, layers, "FX001") == [])
    # saved: net.py is analysed again and its FX001 comes back, where it now is
    layers.write_text(LAYERS_MOVED, encoding="utf-8")
    module_client.text_document_did_save(types.DidSaveTextDocumentParams(
        types.TextDocumentIdentifier(layers.as_uri())))
    await _until(lambda: [d.range for d in _shown(module_client, layers, "FX001")]
                 == [lsp_range(LAYERS_MOVED, "x.sum() > 0")])


# -- watched files -----------------------------------------------------------------------------

@on_the_module_server
async def test_files_changed_on_disk_reanalyse_the_open_documents_that_import_them(
    module_client: LanguageClient, own_folder: Path
):
    registrations = module_client.registrations  # type: ignore[attr-defined]
    await _until(lambda: types.WORKSPACE_DID_CHANGE_WATCHED_FILES in registrations)
    options = registrations[types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    watchers = options["watchers"] if isinstance(options, dict) else options.watchers
    assert [w["globPattern"] if isinstance(w, dict) else w.glob_pattern for w in watchers] == [
        "**/*.py", "**/pyproject.toml"]

    layers, net = _write(own_folder)
    in_net = await open_and_wait(module_client, net, NET)
    assert [d.range for d in in_net if d.code == "FX001"] == [lsp_range(NET, "self.block(x)")]

    fixed = LAYERS.replace("        if x.sum() > 0:\n            x = self.act(x)\n",
                           "        x = self.act(x)\n")
    assert fixed != LAYERS
    layers.write_text(fixed, encoding="utf-8")  # a git checkout
    module_client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(layers.as_uri(), types.FileChangeType.Changed)]))
    await _until(lambda: _shown(module_client, net, "FX001") == []
                 and _shown(module_client, layers) == [])


@on_the_module_server
async def test_a_client_without_dynamic_registration_is_not_asked_to_watch(
    module_nvim_client: LanguageClient, own_folder: Path
):
    path = own_folder / "net.py"
    path.write_text(CLEAN, encoding="utf-8")
    await open_and_wait(module_nvim_client, path, CLEAN)
    assert module_nvim_client.registrations == {}  # type: ignore[attr-defined]


# -- pull diagnostics --------------------------------------------------------------------------

def _pulling_capabilities() -> types.ClientCapabilities:
    """VS Code's, as vscode-languageclient 9+ announces pull diagnostics."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.diagnostic = types.DiagnosticClientCapabilities(
        dynamic_registration=True, related_document_support=False)
    capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(
        refresh_support=True)
    return capabilities


@pytest_lsp.fixture(config=serve_config())
async def pull_client(lsp_client: LanguageClient, tmp_path: Path):
    async with editor_session(lsp_client, editor=_pulling_capabilities(),
                              root=tmp_path) as result:
        lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
        yield


async def test_a_client_that_pulls_gets_diagnostics_by_pull_and_no_push(
    pull_client: LanguageClient, tmp_path: Path
):
    client = pull_client
    provider = client.server_capabilities.diagnostic_provider  # type: ignore[attr-defined]
    assert provider is not None and provider.inter_file_dependencies
    path = tmp_path / "prints.py"
    path.write_text(PRINTS, encoding="utf-8")
    uri = path.as_uri()
    await open_and_wait(client, path, PRINTS)
    assert uri not in client.diagnostics  # never pushed: VS Code would show them twice
    assert client.diagnostic_refresh_count >= 1

    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        types.TextDocumentIdentifier(uri)))
    assert report.kind == "full"
    assert sorted((d.code, d.range.start.line, d.range.start.character,
                   d.range.end.line, d.range.end.character) for d in report.items) == sorted(
        ("FX013", r.start.line, r.start.character, r.end.line, r.end.character)
        for r in (lsp_range(PRINTS, "print(x.shape)"), lsp_range(PRINTS, "print(x.dtype)"),
                  lsp_range(PRINTS, "print(x.device)")))
    assert all(d.code_description.href.startswith(
        "https://github.com/fxls/fxls/blob/main/docs/diagnostics.md#fx013-") for d in report.items)
    again = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        types.TextDocumentIdentifier(uri), previous_result_id=report.result_id))
    assert again.kind == "unchanged" and again.result_id == report.result_id


@on_the_module_server
async def test_a_client_that_cannot_be_told_to_pull_again_gets_pushes(
    module_nvim_client: LanguageClient, own_folder: Path
):
    path = own_folder / "prints.py"
    path.write_text(PRINTS, encoding="utf-8")
    pushed = await open_and_wait(module_nvim_client, path, PRINTS)
    assert sorted(d.range.start.line for d in pushed if d.code == "FX013") == [10, 11, 12]
    assert module_nvim_client.diagnostic_refresh_count == 0


# -- progress ----------------------------------------------------------------------------------

def _progress(client: LanguageClient, prefix: str) -> dict[str, list[Any]]:
    return {str(token): list(values) for token, values in client.progress_reports.items()
            if str(token).startswith(prefix)}


async def test_traces_at_once_share_one_cancellable_progress_with_percentages(
    client: LanguageClient, tmp_path: Path
):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(CLEAN, encoding="utf-8")
    second.write_text(PRINTS, encoding="utf-8")
    for path, text in ((first, CLEAN), (second, PRINTS)):
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(path.as_uri(), "python", 1, text)))
    await wait_for_version(client, first.as_uri(), 1)
    await wait_for_version(client, second.as_uri(), 1)
    await _until(lambda: all(values[-1].kind == "end"
                             for values in _progress(client, "fxls-trace-").values()))
    (values,) = _progress(client, "fxls-trace-").values()  # one begin/end pair, not two
    begin, *reports, end = values
    assert (begin.kind, begin.cancellable, end.kind) == ("begin", True, "end")
    assert begin.percentage == 0 and begin.message in ("tracing a.py, b.py", "tracing a.py")
    percentages = [begin.percentage, *(r.percentage for r in reports)]
    assert percentages == sorted(percentages) and 0 < max(percentages) < 100
    assert any(r.message == "tracing a.py, b.py" for r in reports[:1]) or begin.message == (
        "tracing a.py, b.py")


async def test_the_project_check_reports_each_file_and_publishes_closed_files(
    client: LanguageClient, tmp_path: Path
):
    (tmp_path / "a.py").write_text(CLEAN, encoding="utf-8")
    (tmp_path / "b.py").write_text(PRINTS, encoding="utf-8")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "skipped.py").write_text("raise SystemExit\n", encoding="utf-8")
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.checkProject"))
    assert result == {"files": 2, "checked": 2, "diagnostics": 3, "cancelled": False,
                      "truncated": False, "skipped": []}
    assert sorted(d.range.start.line for d in _shown(client, tmp_path / "b.py", "FX013")) == [
        10, 11, 12]
    await _until(lambda: [v[-1].kind for v in _progress(client, "fxls-task-").values()]
                 == ["end"])
    (values,) = _progress(client, "fxls-task-").values()
    assert [(v.kind, getattr(v, "percentage", None)) for v in values] == [
        ("begin", 0), ("report", 0), ("report", 50), ("end", None)]
    assert values[0].cancellable and values[2].message == "b.py (2/2)"


async def test_cancelling_the_project_check_stops_it(client: LanguageClient, tmp_path: Path):
    for name in ("a.py", "b.py", "c.py", "d.py"):
        (tmp_path / name).write_text(PRINTS, encoding="utf-8")
    check = asyncio.ensure_future(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="fxls.checkProject")))
    await _until(lambda: any(len(v) >= 2 for v in _progress(client, "fxls-task-").values()))
    (token,) = _progress(client, "fxls-task-")
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token))
    result = await check
    assert result["cancelled"] is True and result["checked"] < 4
    await _until(lambda: _progress(client, "fxls-task-")[token][-1].kind == "end")
