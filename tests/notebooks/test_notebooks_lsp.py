"""Notebooks in the editor (LSP 3.17 notebook sync): a notebook is analysed as one document,
the cells before a cell with it; its diagnostics are published to each cell's URI (an empty
list for a cell without any, nothing to the notebook's URI); hover, code lenses and quick
fixes asked on a cell are answered from the notebook's analysis, in the cell. One server for
the module, each test in a folder of its own."""

from __future__ import annotations

import asyncio
import doctest
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pygls.workspace import Workspace
from pytest_lsp import LanguageClient, client_capabilities

from fxls.server import notebooks
from tests.lsp_client import (
    editor_session,
    on_the_module_server,
    own_folder_in,
    serve_config,
    wait_for_version,
)

BLOCK = """\
%matplotlib inline
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        h = self.proj(x)
        return torch.relu(h)
"""
GATE = """\
class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""
NET = """\
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def forward(self, x):
        return self.block(x)


net = Net()
"""
PRINTS = NET.replace("        return self.block(x)",
                     "        print(x.shape)\n        return self.block(x)")
#: cell 1 markdown, cell 2 the model cell 4 uses, cell 3 an FX001 (1-based, as ruff names them)
CELLS = [("markdown", "# A model in a notebook"), ("python", BLOCK), ("python", GATE),
         ("python", NET)]


def notebook_capabilities() -> types.ClientCapabilities:
    """VS Code's capabilities, with notebook document sync (as VS Code 1.99 announces)."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(
            dynamic_registration=True, execution_summary_support=True))
    return capabilities


@pytest.fixture(scope="module")
def notebook_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebooks")


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def notebook_client(lsp_client: LanguageClient, notebook_workspace: Path):
    async with editor_session(lsp_client, editor=notebook_capabilities(),
                              root=notebook_workspace) as result:
        sync = result.capabilities.notebook_document_sync
        assert sync is not None and sync.save, result.capabilities
        (selector,) = sync.notebook_selector
        assert selector.notebook == "jupyter-notebook"
        # the cells that are not Python's too: cells are numbered among all of them
        assert [cell.language for cell in selector.cells] == ["python", "markdown", "raw"]
        yield


@pytest_asyncio.fixture(loop_scope="module")
async def folder(notebook_workspace: Path, request: pytest.FixtureRequest
                 ) -> AsyncIterator[Path]:
    yield own_folder_in(notebook_workspace, request.node.name)


class Notebook:
    """A notebook open in the client: its uri, its cells' uris and texts."""

    def __init__(self, client: LanguageClient, path: Path, cells: list[tuple[str, str]]):
        self.client, self.uri, self.version = client, path.as_uri(), 1
        self.cells = [f"vscode-notebook-cell:{path}#cell{i}" for i in range(len(cells))]
        self.texts = [text for _language, text in cells]
        path.write_text("{}", encoding="utf-8")  # the file exists; the editor's text counts
        kinds = [types.NotebookCellKind.Markup if language == "markdown"
                 else types.NotebookCellKind.Code for language, _text in cells]
        client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            types.NotebookDocument(self.uri, "jupyter-notebook", 1, [
                types.NotebookCell(kind, uri) for kind, uri in zip(kinds, self.cells,
                                                                     strict=True)]),
            [types.TextDocumentItem(uri, language, 1, text)
             for uri, (language, text) in zip(self.cells, cells, strict=True)]))

    async def analysed(self) -> None:
        await wait_for_version(self.client, self.uri, self.version)

    def shown(self, cell: int) -> list[types.Diagnostic]:
        """What cell ``cell`` (0-based) shows; KeyError when nothing was published to it."""
        return list(self.client.diagnostics[self.cells[cell]])

    def change_and_save(self, cell: int, text: str) -> None:
        """Replace cell ``cell``'s text, then save the notebook (as VS Code sends them)."""
        self.version += 1
        self.texts[cell] = text
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            types.VersionedNotebookDocumentIdentifier(self.version, self.uri),
            types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                text_content=[types.NotebookDocumentCellContentChanges(
                    types.VersionedTextDocumentIdentifier(self.version, self.cells[cell]),
                    [types.TextDocumentContentChangeWholeDocument(text)])]))))
        self.client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
            types.NotebookDocumentIdentifier(self.uri)))

    def close(self) -> None:
        self.client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            types.NotebookDocumentIdentifier(self.uri),
            [types.TextDocumentIdentifier(uri) for uri in self.cells]))


def cell_range(text: str, needle: str) -> types.Range:
    """The range of ``needle`` in a cell's text (one line, ASCII)."""
    line = next(i for i, row in enumerate(text.splitlines()) if needle in row)
    start = text.splitlines()[line].index(needle)
    return types.Range(types.Position(line, start), types.Position(line, start + len(needle)))


def position_of(text: str, needle: str) -> types.Position:
    return cell_range(text, needle).start


@on_the_module_server
async def test_diagnostics_go_to_their_cell_and_requests_are_answered_in_cells(
        notebook_client: LanguageClient, folder: Path):
    notebook = Notebook(notebook_client, folder / "model.ipynb", CELLS)
    await notebook.analysed()
    (fx001,) = notebook.shown(2)
    assert (fx001.code, fx001.range) == ("FX001", cell_range(GATE, "x.sum() > 0"))
    assert notebook.shown(1) == [] and notebook.shown(3) == []
    assert notebook.cells[0] not in notebook_client.diagnostics  # markdown: not python
    assert notebook.uri not in notebook_client.diagnostics

    # cell 4 builds Net of cell 2's Block: hovering its call shows the submodule
    hover = await notebook_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(notebook.cells[3]), position_of(NET, "block(x)")))
    assert hover is not None and "Block" in hover.contents.value, hover
    lenses = await notebook_client.text_document_code_lens_async(types.CodeLensParams(
        types.TextDocumentIdentifier(notebook.cells[3])))
    assert [(lens.range.start.line, lens.command.title.split(" ·")[0]) for lens in lenses] \
        == [(0, "fxls: traced")], lenses
    # the shapes of cell 2's assignment, in cell 2 (Block ran inside cell 4's Net)
    hints = await notebook_client.text_document_inlay_hint_async(types.InlayHintParams(
        types.TextDocumentIdentifier(notebook.cells[1]),
        types.Range(types.Position(0, 0), types.Position(len(BLOCK.splitlines()), 0))))
    h = position_of(BLOCK, "h = self.proj(x)")
    assert [(hint.position, hint.label) for hint in hints] == [
        (types.Position(h.line, h.character + 1), ": [2, 8]")]
    # Block is built where cell 4 builds it: said in the cell's terms, as `fxls check` does
    (lens,) = await notebook_client.text_document_code_lens_async(types.CodeLensParams(
        types.TextDocumentIdentifier(notebook.cells[1])))
    block_line = position_of(NET, "Block(8)").line + 1
    assert lens.range.start.line == position_of(BLOCK, "class Block").line
    assert f"(cell 4:{block_line})" in lens.command.title, lens.command.title
    notebook.close()


@on_the_module_server
async def test_a_changed_cell_is_analysed_again_and_its_diagnostic_moves(
        notebook_client: LanguageClient, folder: Path):
    notebook = Notebook(notebook_client, folder / "moves.ipynb", CELLS)
    await notebook.analysed()
    assert [d.range for d in notebook.shown(2)] == [cell_range(GATE, "x.sum() > 0")]
    # two lines more in cell 2 and one in cell 3: the FX001 moves one line, in cell 3
    notebook.change_and_save(1, "# the block\n# of the model\n" + BLOCK)
    moved_gate = GATE.replace("    def forward", "    # gates\n    def forward")
    notebook.change_and_save(2, moved_gate)
    await notebook.analysed()
    (fx001,) = notebook.shown(2)
    assert fx001.range == cell_range(moved_gate, "x.sum() > 0")
    assert fx001.range.start.line == 3
    assert notebook.shown(1) == [] and notebook.shown(3) == []
    notebook.close()


@on_the_module_server
async def test_a_quick_fix_edits_its_cell(notebook_client: LanguageClient, folder: Path):
    notebook = Notebook(notebook_client, folder / "fix.ipynb", [*CELLS[:3], ("python", PRINTS)])
    await notebook.analysed()
    (fx013,) = [d for d in notebook.shown(3) if d.code == "FX013"]
    assert fx013.range == cell_range(PRINTS, "print(x.shape)")
    actions = await notebook_client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(notebook.cells[3]), fx013.range,
        types.CodeActionContext(diagnostics=[fx013])))
    (remove,) = [a for a in actions if "Remove trace-time call" in a.title]
    (change,) = remove.edit.document_changes
    assert (change.text_document.uri, change.text_document.version) == (notebook.cells[3], 1)
    assert [e.range.start.line for e in change.edits] == [fx013.range.start.line]
    assert remove.diagnostics[0].range == fx013.range
    ignore = [a for a in actions if a.title == "fxls: ignore FX013 on this line"]
    (edit,) = ignore[0].edit.document_changes[0].edits
    line = PRINTS.splitlines()[fx013.range.start.line]
    assert edit.range.start == types.Position(fx013.range.start.line, len(line))
    notebook.close()


@on_the_module_server
async def test_closing_a_notebook_clears_its_cells(notebook_client: LanguageClient,
                                                   folder: Path):
    notebook = Notebook(notebook_client, folder / "closed.ipynb", CELLS)
    await notebook.analysed()
    assert notebook.shown(2)
    notebook.close()
    for _ in range(400):
        if not any(notebook_client.diagnostics.get(uri, [1]) for uri in notebook.cells):
            break
        await asyncio.sleep(0.01)
    assert {uri: list(notebook_client.diagnostics.get(uri, [None])) for uri in notebook.cells
            } == {uri: [] for uri in notebook.cells}
    assert notebook.uri not in notebook_client.diagnostics


@on_the_module_server
async def test_a_cell_removed_from_the_notebook_shows_nothing(
        notebook_client: LanguageClient, folder: Path):
    notebook = Notebook(notebook_client, folder / "removed.ipynb", CELLS)
    await notebook.analysed()
    assert [d.code for d in notebook.shown(2)] == ["FX001"]
    gate = notebook.cells[2]
    notebook.version += 1
    notebook_client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        types.VersionedNotebookDocumentIdentifier(notebook.version, notebook.uri),
        types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            structure=types.NotebookDocumentCellChangeStructure(
                types.NotebookCellArrayChange(2, 1, []),
                did_close=[types.TextDocumentIdentifier(gate)])))))
    notebook_client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
        types.NotebookDocumentIdentifier(notebook.uri)))
    await notebook.analysed()
    assert list(notebook_client.diagnostics[gate]) == []
    assert notebook.shown(1) == [] and notebook.shown(3) == []
    notebook.close()


def _workspace_with(uri: str, cells: list[tuple[str, str]], version: int = 1) -> Workspace:
    """A pygls workspace holding the notebook ``uri`` (cells as (language, text))."""
    workspace = Workspace(None)
    kinds = [types.NotebookCellKind.Markup if language == "markdown"
             else types.NotebookCellKind.Code for language, _text in cells]
    uris = [f"{uri}#cell{i}" for i in range(len(cells))]
    workspace.put_notebook_document(types.DidOpenNotebookDocumentParams(
        types.NotebookDocument(uri, "jupyter-notebook", version, [
            types.NotebookCell(kind, cell) for kind, cell in zip(kinds, uris, strict=True)]),
        [types.TextDocumentItem(cell, language, 1, text)
         for cell, (language, text) in zip(uris, cells, strict=True)]))
    return workspace


def test_the_server_notebooks_docstring_example_holds():
    assert doctest.testmod(notebooks).failed == 0


def test_a_notebooks_diagnostics_are_split_per_cell_with_their_related_places():
    uri = "file:///work/nb.ipynb"
    workspace = _workspace_with(uri, [("markdown", "# t"), ("python", "a = 1\nb = 2\n"),
                                      ("sql", "select 1"), ("python", "c = 3\n")])
    layout = notebooks.Notebooks()
    text = layout.read(workspace, uri)
    assert text is not None and text.version == 1
    assert text.source.splitlines()[1:] == ["a = 1", "b = 2", "c = 3"]  # sql: not analysed

    def at(line: int, start: int, end: int) -> types.Range:
        return types.Range(types.Position(line, start), types.Position(line, end))

    problem = types.Diagnostic(at(3, 0, 1), "built at (line 3)", code="FX001", related_information=[
        types.DiagnosticRelatedInformation(types.Location(uri, at(2, 0, 5)), "called here"),
        types.DiagnosticRelatedInformation(types.Location("file:///work/l.py", at(2, 0, 5)),
                                           "elsewhere")])
    shown = layout.per_cell(uri, [problem], 1)
    assert sorted(shown) == [f"{uri}#cell1", f"{uri}#cell3"]
    assert shown[f"{uri}#cell1"] == ([], 1)
    (moved,), version = shown[f"{uri}#cell3"]
    assert (moved.range, moved.message, version) == (at(0, 0, 1), "built at (cell 2:2)", 1)
    here, elsewhere = moved.related_information
    assert (here.location.uri, here.location.range) == (f"{uri}#cell1", at(1, 0, 5))
    assert elsewhere == problem.related_information[1]

    # cell 4 removed: once published to, it is cleared by the next version's publish
    workspace = _workspace_with(uri, [("markdown", "# t"), ("python", "a = 1\nb = 2\n")], 2)
    layout.read(workspace, uri)
    assert layout.per_cell(uri, [], 2) == {f"{uri}#cell1": ([], 1), f"{uri}#cell3": ([], None)}
    assert layout.forget(uri) == {f"{uri}#cell1"}
    assert not layout.is_notebook(uri)
