"""A fix of an export problem through the real server: the FX201 of a guard on an `.item()`
value is offered the `torch._check` that holds on the example inputs (verified by exporting
the edited text in the worker), not the one that does not; applied and saved, the file
exports."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import open_and_wait, save_and_wait
from tests.quick_fixes.test_export_fixes import ASSUME


def _range(line: int, start: int, end: int) -> types.Range:
    return types.Range(types.Position(line, start), types.Position(line, end))


async def test_the_verified_check_is_offered_applied_and_the_file_exports(
        client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "assume.py"
    path.write_text(ASSUME, encoding="utf-8")
    uri = path.as_uri()
    diagnostics = await open_and_wait(client, path, ASSUME)
    guard = ASSUME.splitlines().index("        if n > 2:")
    assert [(d.code, d.range) for d in diagnostics] == [("FX201", _range(guard, 11, 16))]

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=diagnostics[0].range,
        context=types.CodeActionContext(diagnostics=diagnostics,
                                        only=[types.CodeActionKind.QuickFix])))
    verified = [a.title for a in actions or [] if not a.title.startswith("fxls: ignore")]
    assert verified == ["Assume `n > 2` for export (`torch._check`)",
                        "Rewrite the branch with `torch.cond` (both branches traced, one runs)"]
    check = actions[0]
    assert list(check.diagnostics) == diagnostics and not check.is_preferred
    (change,) = check.edit.document_changes
    assert change.text_document.version == 1
    assert list(change.edits) == [types.TextEdit(range=_range(guard, 0, 0),
                                                 new_text="        torch._check(n > 2)\n")]

    lines = ASSUME.splitlines(keepends=True)
    fixed = "".join([*lines[:guard], "        torch._check(n > 2)\n", *lines[guard:]])
    assert await save_and_wait(client, path, fixed, 2) == []
