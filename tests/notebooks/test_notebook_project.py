"""The editor's project check (``fxls.checkProject``) on a folder with a notebook: the
closed notebook is analysed as ``fxls check`` does, its diagnostics shown on the notebook's
file at its start, each message naming its cell (a closed notebook's cells have no URI to
show them on); opening the notebook moves them into its cells. One server for the module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, on_the_module_server, serve_config
from tests.notebooks.test_notebooks_lsp import (
    CELLS,
    GATE,
    Notebook,
    cell_range,
    notebook_capabilities,
)

FILE_START = types.Range(types.Position(0, 0), types.Position(0, 0))
#: JSON stops at `"source"` of line 2 (0-based 1), column 23 (0-based)
MISSING_COMMA = '{"cells": [\n  {"cell_type": "code" "source": []}\n]}\n'


def _notebook_file(cells: list[tuple[str, str]]) -> str:
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
        "cells": [{"cell_type": "markdown" if language == "markdown" else "code",
                   "metadata": {}, "source": text.splitlines(True)}
                  for language, text in cells]})


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("notebook_project")
    (root / "model.ipynb").write_text(_notebook_file(CELLS), encoding="utf-8")
    (root / "broken.ipynb").write_text(MISSING_COMMA, encoding="utf-8")
    return root


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def client(lsp_client: LanguageClient, project: Path):
    async with editor_session(lsp_client, editor=notebook_capabilities(), root=project):
        yield


@on_the_module_server
async def test_a_closed_notebook_is_checked_and_shown_on_its_file_then_in_its_cells(
        client: LanguageClient, project: Path):
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.checkProject"))
    assert (result["files"], result["checked"], result["diagnostics"]) == (2, 2, 2), result
    (broken,) = client.diagnostics[(project / "broken.ipynb").as_uri()]
    assert (broken.code, broken.message, broken.range) == (
        "FX100", "the notebook is not valid JSON: Expecting ',' delimiter",
        types.Range(types.Position(1, 23), types.Position(1, 24)))
    path = project / "model.ipynb"
    (shown,) = client.diagnostics[path.as_uri()]
    # the FX001 of cell 3 (1-based among all cells, as ruff names them), line 3, column 12
    assert (shown.code, shown.range) == ("FX001", FILE_START)
    assert shown.message.startswith("cell 3:3:12: "), shown.message
    assert "(line " not in shown.message

    notebook = Notebook(client, path, CELLS)
    await notebook.analysed()
    (in_cell,) = notebook.shown(2)
    assert (in_cell.code, in_cell.range) == ("FX001", cell_range(GATE, "x.sum() > 0"))
    assert in_cell.message == shown.message.removeprefix("cell 3:3:12: ")
    assert list(client.diagnostics[path.as_uri()]) == []  # cleared from the file

    # checked again while open: its own analysis, shown in its cells
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxls.checkProject"))
    assert (result["files"], result["checked"]) == (2, 2), result
    assert [(d.code, d.range) for d in notebook.shown(2)] == [
        ("FX001", cell_range(GATE, "x.sum() > 0"))]
    assert list(client.diagnostics[path.as_uri()]) == []
    notebook.close()
