"""End to end: a problem found in ``layers.py`` while tracing ``net.py`` is shown in both.

``net.py`` builds ``Net`` from ``layers.Block``; ``Block.forward`` branches on a traced
value. Opening ``net.py`` publishes that FX001 to ``layers.py`` (where it is) and to
``net.py`` at the call that reaches it; the contribution follows ``net.py``'s analyses and
goes when ``net.py`` closes; saving ``layers.py`` re-analyses ``net.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import on_the_module_server, open_and_wait, save_and_wait

LAYERS = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = self.fc(x)
        if x.sum() > 0:  # 门控 😀
            x = x.relu()
        return x
"""

LAYERS_FIXED = LAYERS.replace(
    "        if x.sum() > 0:  # 门控 😀\n            x = x.relu()\n", "        x = x.relu()\n"
)

NET = """import torch
from torch import nn

from layers import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        h = self.block(x)
        return self.head(h)
"""

NET_WITHOUT_BLOCK = NET.replace("        h = self.block(x)\n", "        h = x\n")


def lsp_range(text: str, needle: str) -> types.Range:
    """The range of ``needle`` in ``text`` in LSP (UTF-16) positions."""

    def position(offset: int) -> types.Position:
        before = text[:offset]
        line_text = before[before.rfind("\n") + 1 :]
        return types.Position(before.count("\n"), len(line_text.encode("utf-16-le")) // 2)

    start = text.index(needle)
    return types.Range(position(start), position(start + len(needle)))


def _with_code(diagnostics: list[types.Diagnostic], code: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == code]


async def _until(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def _shown(client: LanguageClient, path: Path) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(path.as_uri(), []))


def _write_files(tmp_path: Path) -> tuple[Path, Path]:
    layers, net = tmp_path / "layers.py", tmp_path / "net.py"
    layers.write_text(LAYERS, encoding="utf-8")
    net.write_text(NET, encoding="utf-8")
    return layers, net


@on_the_module_server
async def test_a_problem_in_an_imported_file_is_shown_there_and_at_the_reaching_call(
    module_client: LanguageClient, own_folder: Path
):
    layers, net = _write_files(own_folder)
    in_net = await open_and_wait(module_client, net, NET)

    (in_layers,) = _with_code(_shown(module_client, layers), "FX001")
    assert in_layers.range == lsp_range(LAYERS, "x.sum() > 0")
    assert in_layers.severity == types.DiagnosticSeverity.Error

    (echo,) = _with_code(in_net, "FX001")
    assert echo.range == lsp_range(NET, "self.block(x)")
    assert echo.message.startswith("in layers.py:12: ")
    site = echo.related_information[0].location
    assert (site.uri, site.range) == (layers.as_uri(), lsp_range(LAYERS, "x.sum() > 0"))

    lenses = await module_client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(net.as_uri()))
    )
    assert [lens.command.title.split(" · ")[0] for lens in lenses] == ["fxls: partial"]

    module_client.text_document_did_close(
        types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(net.as_uri()))
    )
    await _until(lambda: _shown(module_client, layers) == [] and _shown(module_client, net) == [])


@on_the_module_server
async def test_reanalysis_replaces_what_a_document_found_in_other_files(
    module_client: LanguageClient, own_folder: Path
):
    layers, net = _write_files(own_folder)
    await open_and_wait(module_client, net, NET)
    assert _with_code(_shown(module_client, layers), "FX001")

    in_net = await save_and_wait(module_client, net, NET_WITHOUT_BLOCK, 2)
    assert _with_code(in_net, "FX001") == []
    assert _shown(module_client, layers) == []


@on_the_module_server
async def test_saving_an_imported_file_reanalyses_the_open_documents_that_import_it(
    module_client: LanguageClient, own_folder: Path
):
    layers, net = _write_files(own_folder)
    await open_and_wait(module_client, net, NET)
    in_layers = await open_and_wait(module_client, layers, LAYERS)
    # found by both analyses (Block is a root of layers.py too), shown once
    assert [d.range for d in _with_code(in_layers, "FX001")] == [lsp_range(LAYERS, "x.sum() > 0")]

    await save_and_wait(module_client, layers, LAYERS_FIXED, 2)
    # net.py was not saved: its diagnostics change because layers.py changed, and what its
    # previous analysis found in layers.py goes with them
    await _until(lambda: _with_code(_shown(module_client, net), "FX001") == [])
    await _until(lambda: _with_code(_shown(module_client, layers), "FX001") == [])
    async with asyncio.timeout(60):  # and its complete report follows (code lens)
        while True:
            lenses = await module_client.text_document_code_lens_async(
                types.CodeLensParams(types.TextDocumentIdentifier(net.as_uri()))
            )
            if lenses and lenses[0].command.title.startswith("fxls: traced · "):
                break
            await asyncio.sleep(0.05)


@on_the_module_server
async def test_a_package_file_runs_as_its_module_and_its_problems_reach_the_siblings(
    module_client: LanguageClient, own_folder: Path
):
    """A file of a src-layout package (relative imports, a registry that refuses a second
    registration, a config dataclass) opened in the editor: its unsaved text runs as
    `minizoo.models.vitish`, and the FX001 in `minizoo/layers/blocks.py` (another file of the
    package) is published there."""
    import shutil

    project = own_folder / "minizoo"
    shutil.copytree(Path(__file__).parents[1] / "data" / "minizoo", project)
    vitish = project / "src/minizoo/models/vitish.py"
    blocks = project / "src/minizoo/layers/blocks.py"
    text = vitish.read_text(encoding="utf-8") + "\n# unsaved edit\n"
    in_vitish = await open_and_wait(module_client, vitish, text)
    assert not [d for d in in_vitish if d.code in ("FX100", "FX102")], in_vitish

    blocks_text = blocks.read_text(encoding="utf-8")
    (in_blocks,) = _with_code(_shown(module_client, blocks), "FX001")
    assert in_blocks.range == lsp_range(blocks_text, "h.mean() > 0")
    assert in_blocks.message.startswith("`h.mean() > 0` depends on a traced value")

    hover = await module_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(vitish.as_uri()),
        lsp_range(text, "TinyViT(nn.Module)").start))
    assert hover is not None
    assert "built from ViTConfig() with 2 layers" in hover.contents.value
