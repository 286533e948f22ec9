"""Hover answers from the models' report while torch's export/compile tier still runs: the
tier comes after the models' complete report (graphs, shapes) and can take as long as a
model's compile; a hover right after a save must not wait for it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.export_compile.test_targets_lsp import (
    QUICK,
    SLOW_COMPILE,
    TRACE_AND_COMPILE,
    _open_document,
    _sleep_is_visible,
    _sleeping_descendants,
    module_client,  # noqa: F401 (the fixture)
)
from tests.lsp_client import on_the_module_server, save_and_wait


@on_the_module_server
async def test_hover_answers_while_the_compile_tier_runs(
        module_client: LanguageClient, own_folder: Path) -> None:  # noqa: F811
    if not _sleep_is_visible():
        pytest.skip("/proc/<pid>/wchan does not show a sleeping process's wait here")
    (own_folder / "pyproject.toml").write_text(TRACE_AND_COMPILE, encoding="utf-8")
    path = own_folder / "slow.py"
    _open_document(module_client, path, SLOW_COMPILE)
    async with asyncio.timeout(300):
        while not _sleeping_descendants():  # dynamo is running forward: the tier has begun
            await asyncio.sleep(0.1)
    line = SLOW_COMPILE.splitlines().index("        x = x + 1")
    async with asyncio.timeout(60):  # the tier sleeps for 600 s: this answer cannot wait
        hover = await module_client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(path.as_uri()), types.Position(line, 12)))
    assert hover is not None and "add" in str(hover.contents)
    assert _sleeping_descendants()  # the answer came while the tier still ran
    async with asyncio.timeout(300):
        await save_and_wait(module_client, path, QUICK, 2)  # ends the sleeping job
