"""`fxls serve` and files that attack their own report (issue 20): the attacking file gets a
publish (its FX102, or capped or coalesced diagnostics) and the server goes on publishing for
the others (pytest-lsp client, real server and worker)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import on_the_module_server, open_and_wait
from tests.security import hostile_reports as hostile

INVALID = "the analysis produced an invalid report"


async def _open(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    path.write_text(text, encoding="utf-8")
    async with asyncio.timeout(180):
        return await open_and_wait(client, path, text)


def _count_publishes(client: LanguageClient) -> dict[str, int]:
    """How many publishes each URI got from now on (wraps pytest-lsp's own handler)."""
    counts: dict[str, int] = {}
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def counting(*args: Any) -> Any:
        params = args[-1]
        counts[params.uri] = counts.get(params.uri, 0) + 1
        return original(*args)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = counting
    return counts


@pytest.mark.parametrize(("source", "line", "detail"), [
    (hostile.FORGED_TO_DICT, 2, "(path: is missing)"),
    (hostile.BAD_TYPES, 2, "(path: is an integer, expected a string)"),
    (hostile.OVERSIZED_FRAME, 4, "(the job sent a result frame of 1,099,511,627,776 bytes"),
], ids=["forged_to_dict", "bad_types", "oversized_frame"])
@on_the_module_server
async def test_a_forged_report_is_published_as_fx102_and_the_server_goes_on(
    module_client: LanguageClient, own_folder: Path, source: str, line: int, detail: str
) -> None:
    (fx102,) = await _open(module_client, own_folder / "attack.py", source)
    assert fx102.code == "FX102" and fx102.range.start.line == line
    assert fx102.message.startswith(f"{INVALID} {detail}")
    assert f"line {line + 1} imports fxls" in fx102.message
    good = await _open(module_client, own_folder / "good.py", hostile.GOOD)
    assert [(d.code, d.range.start.line) for d in good] == [("FX001", 11)]


@on_the_module_server
async def test_200000_forged_diagnostics_are_capped_and_hover_still_answers(
    module_client: LanguageClient, own_folder: Path
) -> None:
    path = own_folder / "many.py"
    found = await _open(module_client, path, hostile.MANY_DIAGNOSTICS)
    # the 999 warnings kept are one and the same (one per code and range is shown)
    assert [(d.code, d.range.start.line) for d in found] == [
        ("FX013", 0), ("FX001", 1), ("FX102", 0)]  # FX001: the one error, last of 200,000
    assert found[-1].message.endswith("the 199,000 least severe were dropped")
    async with asyncio.timeout(60):  # answered (86 s before the cap) from the forged
        hover = await module_client.text_document_hover_async(types.HoverParams(  # report, which
            types.TextDocumentIdentifier(path.as_uri()), types.Position(1, 2)))  # has no
    assert hover is None  # modules: nothing to show
    good = await _open(module_client, own_folder / "good.py", hostile.GOOD)
    assert [(d.code, d.range.start.line) for d in good] == [("FX001", 11)]


@on_the_module_server
async def test_300_partial_results_are_a_few_publishes(
    module_client: LanguageClient, own_folder: Path
) -> None:
    counts = _count_publishes(module_client)
    path = own_folder / "flood.py"
    found = await _open(module_client, path, hostile.PARTIAL_FLOOD)
    assert [(d.code, d.range.start.line) for d in found] == [("FX001", 18)]
    assert 1 <= counts[path.as_uri()] <= 6  # was 302: at most 4 partials and the report
