"""The result cache in the editor, over stdio with a real ``fxls serve``: a document opened
again unchanged shows its stored diagnostics before the worker has answered (marked
``cached`` in ``fxls/analysisDone``), and the fresh analysis replaces them; an edited
dependency, a changed setting or a damaged entry is a miss.

The order is proven without timing: the user file's module-level code waits until the test
creates a ``release`` file, so while it is missing the worker cannot answer.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import (
    close_documents_in,
    editor_session,
    on_the_module_server,
    open_and_wait,
    own_folder_in,
    serve_config,
    wait_for_version,
)
from tests.notebooks.test_notebooks_lsp import Notebook, notebook_capabilities

#: the server's cache folder: made for this module (the server's environment is fixed when
#: the module is imported), removed after it
CACHE_FOLDER = Path(tempfile.mkdtemp(prefix="fxls-cache-server-"))
GIVE_UP_S = 120.0

#: the FX001 of ``if x.sum() > 0:`` in GATED (line 21, the condition)
FX001 = [("FX001", 21, 11, 21, 22)]

GATED = '''import os
import time

import torch
from torch import nn

from helper import WIDTH

# the test lets the analysis go on by creating this file
for _ in range(3000):
    if os.path.exists(os.path.join(os.path.dirname(__file__), "release")):
        break
    time.sleep(0.01)


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return x
'''


@pytest.fixture(scope="module", autouse=True)
def _cache_folder_removed() -> Any:
    yield
    shutil.rmtree(CACHE_FOLDER, ignore_errors=True)


@pytest_lsp.fixture(config=serve_config(env={"FXLS_NO_CACHE": "0",
                                             "FXLS_CACHE_DIR": str(CACHE_FOLDER)}),
                    scope="module")
async def cache_client(lsp_client: LanguageClient, module_workspace: Path):
    """One server with the result cache on, for the module (VS Code with notebooks)."""
    async with editor_session(lsp_client, editor=notebook_capabilities(),
                              root=module_workspace):
        yield


@pytest_asyncio.fixture(loop_scope="module")
async def folder(cache_client: LanguageClient, module_workspace: Path,
                 request: pytest.FixtureRequest) -> AsyncIterator[Path]:
    """The test's folder, with the gated model, its ``helper`` and the release file."""
    path = own_folder_in(module_workspace, request.node.name)
    (path / "helper.py").write_text("WIDTH = 4\n", encoding="utf-8")
    (path / "gate.py").write_text(GATED, encoding="utf-8")
    (path / "release").touch()
    yield path
    close_documents_in(cache_client, path)


def _cached(client: LanguageClient, uri: str, version: int) -> bool | None:
    """Whether the last ``fxls/analysisDone`` of ``uri`` at ``version`` said ``cached``;
    None before the first."""
    params = client.fxls_done_params.get((uri, version))  # type: ignore[attr-defined]
    if params is None:
        return None
    return (params.get("cached") if isinstance(params, dict)
            else getattr(params, "cached", None)) is True


async def _until(condition: Any) -> None:
    """Wait for ``condition`` (a bound for a broken server only: the gate holds 30 s)."""
    deadline = asyncio.get_running_loop().time() + GIVE_UP_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the server never got there"
        await asyncio.sleep(0.005)


def _close(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))


def _open(client: LanguageClient, path: Path, version: int) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(path.as_uri(), "python", version, path.read_text())))


async def _lookup_said(client: LanguageClient, path: Path, count: int) -> str:
    """The server's ``count``-th log line about the result cache and ``path`` on open."""
    def said() -> list[str]:
        return [m.message for m in client.log_messages
                if m.message.startswith(f"fxls: {path.as_uri()}: ")]
    await _until(lambda: len(said()) >= count)
    return said()[count - 1]


def _shown(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int, int, int, int]]:
    return [(str(d.code), d.range.start.line, d.range.start.character, d.range.end.line,
             d.range.end.character) for d in diagnostics]


def _entries(path: Path) -> set[Path]:
    """The stored entries whose report is ``path``'s: the previous test's document, closed
    when that test ended, may be stored while this one runs."""
    return {entry for entry in CACHE_FOLDER.rglob("*.report")
            if (_report_path(entry) or "") == str(path)}


def _report_path(entry: Path) -> str | None:
    try:
        decoded = json.loads(zlib.decompress(entry.read_bytes()))
        return decoded["report"]["path"]
    except (OSError, zlib.error, ValueError, KeyError, TypeError):
        return None


async def _first_open(client: LanguageClient, path: Path) -> Path:
    """Open ``path`` at version 1, let its analysis run and close it, once its result is
    stored; the entry."""
    before = _entries(path)
    diagnostics = await open_and_wait(client, path, path.read_text())
    assert _cached(client, path.as_uri(), 1) is False
    assert _shown(diagnostics) == FX001
    _close(client, path)
    await _until(lambda: _entries(path) - before)  # written whole: a temporary file renamed
    (entry,) = _entries(path) - before
    return entry




@on_the_module_server
async def test_reopened_unchanged_file_shows_the_cache_before_the_worker_answers(
    cache_client: LanguageClient, folder: Path
):
    path, uri = folder / "gate.py", (folder / "gate.py").as_uri()
    await _first_open(cache_client, path)
    (folder / "release").unlink()
    _open(cache_client, path, 2)
    await _until(lambda: _cached(cache_client, uri, 2) is not None)
    # the worker waits for the release file: this answer is the cache's
    assert _cached(cache_client, uri, 2) is True
    assert _shown(cache_client.diagnostics[uri]) == FX001
    assert "shown from the result cache" in await _lookup_said(cache_client, path, 2)
    hover = await cache_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), types.Position(15, 7)))
    assert hover is not None and "Gate" in hover.contents.value
    (folder / "release").touch()
    await _until(lambda: _cached(cache_client, uri, 2) is False)
    assert _shown(cache_client.diagnostics[uri]) == FX001


async def _reopened_misses(client: LanguageClient, folder: Path) -> None:
    """Reopen gate.py (version 2) while the worker is held: nothing is published before
    it answers; then it answers."""
    path, uri = folder / "gate.py", (folder / "gate.py").as_uri()
    (folder / "release").unlink()
    _open(client, path, 2)
    assert "not in the result cache" in await _lookup_said(client, path, 2)
    assert _cached(client, uri, 2) is None
    assert list(client.diagnostics[uri]) == []  # cleared on close, nothing since
    (folder / "release").touch()
    assert _shown(await wait_for_version(client, uri, 2)) == FX001
    assert _cached(client, uri, 2) is False


@on_the_module_server
async def test_an_edited_import_is_a_miss(cache_client: LanguageClient, folder: Path):
    await _first_open(cache_client, folder / "gate.py")
    (folder / "helper.py").write_text("WIDTH = 4  # the same width, another text\n")
    await _reopened_misses(cache_client, folder)


@on_the_module_server
async def test_a_changed_setting_is_a_miss(cache_client: LanguageClient, folder: Path):
    (folder / "pyproject.toml").write_text("[tool.fxls]\n")
    await _first_open(cache_client, folder / "gate.py")
    (folder / "pyproject.toml").write_text('[tool.fxls]\ntrace_mode = "train"\n')
    await _reopened_misses(cache_client, folder)


@on_the_module_server
async def test_a_damaged_entry_is_a_miss_and_the_fresh_result_replaces_it(
    cache_client: LanguageClient, folder: Path
):
    path, uri = folder / "gate.py", (folder / "gate.py").as_uri()
    entry = await _first_open(cache_client, path)
    damaged = entry.read_bytes()[:-20]  # cut short
    entry.write_bytes(damaged)
    await _reopened_misses(cache_client, folder)
    _close(cache_client, path)
    await _until(lambda: entry.read_bytes() != damaged)  # the fresh result stored again
    _open(cache_client, path, 3)
    await _until(lambda: _cached(cache_client, uri, 3) is not None)
    assert _cached(cache_client, uri, 3) is True
    assert _shown(cache_client.diagnostics[uri]) == FX001
    await wait_for_version(cache_client, uri, 3)


def _gated_cells(release: Path) -> list[tuple[str, str]]:
    """A notebook: the gate in cell 1, a class with an FX001 in cell 2."""
    gate = GATED[:GATED.index("class Gate")].replace(
        'os.path.join(os.path.dirname(__file__), "release")', repr(str(release)))
    return [("python", gate.replace("from helper import WIDTH\n", "WIDTH = 4\n")),
            ("python", GATED[GATED.index("class Gate"):])]


@on_the_module_server
async def test_a_reopened_notebook_shows_the_cache_in_its_cell(
    cache_client: LanguageClient, folder: Path
):
    cells, path = _gated_cells(folder / "release"), folder / "gate.ipynb"
    before = _entries(path)
    notebook = Notebook(cache_client, path, cells)
    await notebook.analysed()
    assert _cached(cache_client, notebook.uri, 1) is False
    in_cell = [("FX001", 6, 11, 6, 22)]  # the condition, in cell 2
    assert _shown(notebook.shown(1)) == in_cell
    notebook.close()
    await _until(lambda: _entries(path) - before)
    (folder / "release").unlink()
    notebook = Notebook(cache_client, path, cells)
    await _until(lambda: _cached(cache_client, notebook.uri, 1) is True)
    assert _shown(notebook.shown(1)) == in_cell and notebook.shown(0) == []
    (folder / "release").touch()
    await _until(lambda: _cached(cache_client, notebook.uri, 1) is False)
    assert _shown(notebook.shown(1)) == in_cell
    notebook.close()
