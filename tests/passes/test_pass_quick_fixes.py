"""A quick fix for FX pass code through the real server: after a save, the FX005 fix
(`inserting_before` -> `inserting_after`) is offered for the pass line, verified by
re-analysis in the worker; applied and saved, the graph is valid."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import open_and_wait, save_and_wait
from tests.passes.test_pass_fixes import SAMPLE


def _apply(text: str, edit: types.WorkspaceEdit, uri: str, version: int) -> str:
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        return sum(len(line) for line in lines[: position.line]) + position.character

    (change,) = edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == version
    for item in sorted(change.edits, key=lambda e: offset(e.range.start), reverse=True):
        start, end = offset(item.range.start), offset(item.range.end)
        text = text[:start] + item.new_text + text[end:]
    return text


async def test_the_fx005_pass_fix_is_offered_after_a_save(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    path = tmp_path / "negate.py"
    path.write_text("", encoding="utf-8")
    uri = path.as_uri()
    assert await open_and_wait(client, path, "") == []
    diagnostics = await save_and_wait(client, path, SAMPLE, 2)
    assert sorted(d.code for d in diagnostics) == ["FX005", "FX007", "FX010"]
    (fx005,) = [d for d in diagnostics if d.code == "FX005"]
    line = SAMPLE.splitlines()[fx005.range.start.line]
    assert line.strip() == "neg = gm.graph.call_function(torch.neg, (node,))"
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=fx005.range,
        context=types.CodeActionContext(diagnostics=[fx005],
                                        only=[types.CodeActionKind.QuickFix])))
    titles = [a.title for a in actions or []]
    # the verified fix first, then the comment that silences the line (never preferred)
    assert titles == ["Insert after `node` instead of before it (`inserting_after`)",
                      "fxls: ignore FX005 on this line"], titles
    action, ignore = actions
    assert not ignore.is_preferred
    assert action.kind == types.CodeActionKind.QuickFix and action.is_preferred
    fixed = _apply(SAMPLE, action.edit, uri, 2)
    assert fixed == SAMPLE.replace("inserting_before(node)", "inserting_after(node)")
    after = await save_and_wait(client, path, fixed, 3)
    assert sorted(d.code for d in after if d.severity == types.DiagnosticSeverity.Error) == [
        "FX007"]
    assert "FX005" not in {d.code for d in after}


async def test_fix_all_fixes_the_three_pass_problems(client: LanguageClient,
                                                     tmp_path: Path) -> None:
    path = tmp_path / "negate.py"
    path.write_text(SAMPLE, encoding="utf-8")
    uri = path.as_uri()
    diagnostics = await open_and_wait(client, path, SAMPLE)
    assert sorted(d.code for d in diagnostics) == ["FX005", "FX007", "FX010"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.fxls"])))
    (action,) = actions
    fixed = _apply(SAMPLE, action.edit, uri, 1)
    assert "inserting_after(node):\n                neg" in fixed
    assert "            node.target = torch.sigmoid\n    gm.recompile()\n    return gm\n" in fixed
    assert "    gm.graph.eliminate_dead_code()\n    gm.recompile()\n    return gm\n" in fixed
    assert "gm.graph.call_function(torch.abs, (node,))" in fixed  # the unsafe removal: not
    after = await save_and_wait(client, path, fixed, 2)
    # what is left: information that the passes change the model's outputs (FX017)
    assert {d.code for d in after} <= {"FX017"}
