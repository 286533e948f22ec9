"""Each quick fix end to end: offered by the real server (after re-tracing in the worker),
applied by the client, and the saved result traces without that problem. The tests share
the module's server, each in its own folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import on_the_module_server, open_and_wait, save_and_wait

HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"

CASES = {
    "dead": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(8, 8)\n\n    def forward(self, x):\n"
        "        unused = self.proj(x)\n        return x.relu()\n",
        "FX010", "Remove unused",
    ),
    "inplace": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(8, 8)\n\n    def forward(self, x):\n"
        "        x.add_(1)\n        return self.proj(x)\n",
        "FX011", "out-of-place",
    ),
    "constant": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        mask = torch.ones(4, 4).triu()\n        return self.proj(x) * mask\n",
        "FX012", "buffer",
    ),
    "print": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        print(x.shape)\n        return self.proj(x)\n",
        "FX013", "Remove trace-time call",
    ),
    "assert": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        h = self.proj(x)\n        assert h.dim() == 2, 'need 2-d'\n        return h\n",
        "FX001", "torch._assert",
    ),
    "where": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        h = self.proj(x)\n        return h if h.mean() > 0 else h * 0\n",
        "FX001", "torch.where",
    ),
    "len": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        h = self.proj(x)\n        n = len(h)\n        return h.view(n, -1)\n",
        "FX003", "size(0)",
    ),
    "rewrite": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        h = self.proj(x)\n        return h * torch.sigmoid(h)\n",
        "FX020", "F.silu",
    ),
    "init": (
        HEAD + "class Net(nn.Module):\n    def __init__(self, d_in: int, d_out: int = 4):\n"
        "        super().__init__()\n"
        "        self.proj = nn.Linear(d_in, d_out)\n"
        "        self.bits = d_in.bit_length()  # an int's method: no stand-in has it\n\n"
        "    def forward(self, x):\n        return self.proj(x)\n",
        "FX101", "init",
    ),
    "wrap": (
        HEAD + "def gate(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\n\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        return gate(self.proj(x))\n",
        "FX001", "wrap",
    ),
    "concrete": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x, scale=True):\n"
        "        h = self.proj(x)\n        if scale:\n            h = h * 2\n        return h\n",
        "FX001", "concrete",
    ),
    "none_default": (
        HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n        self.mask_token = None\n\n"
        "    def forward(self, x, mask=None):\n        h = self.proj(x)\n"
        "        if mask is not None:\n            h = h + self.mask_token.expand(h.shape)\n"
        "        return h\n",
        "FX004", "concrete",
    ),
    "leaf": (
        HEAD + "class Inner(nn.Module):\n    def forward(self, x):\n        if x.max() > 1:\n"
        "            return x\n        return -x\n\n\n"
        "class Outer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n        self.inner = Inner()\n\n"
        "    def forward(self, x):\n        return self.inner(self.proj(x))\n\n\n"
        "# fxls: skip\nclass Unused(Inner):\n    pass\n",
        "FX001", "leaf",
    ),
}


def _apply(text: str, edit: types.WorkspaceEdit, uri: str) -> str:
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        return sum(len(line) for line in lines[: position.line]) + position.character

    # VS Code takes versioned documentChanges: the edit is for version 1, the opened text
    (change,) = edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 1
    edits = sorted(change.edits, key=lambda e: offset(e.range.start), reverse=True)
    for item in edits:
        start, end = offset(item.range.start), offset(item.range.end)
        text = text[:start] + item.new_text + text[end:]
    return text


@on_the_module_server
@pytest.mark.parametrize("case", sorted(CASES))
async def test_quick_fix_is_offered_applied_and_clean_after_retrace(
    module_client: LanguageClient, own_folder: Path, case: str
):
    text, code, title_part = CASES[case]
    path = own_folder / f"{case}.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    diagnostics = await open_and_wait(module_client, path, text)
    targets = [d for d in diagnostics if d.code == code]
    assert targets, [(d.code, d.message) for d in diagnostics]
    actions = await module_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=targets[0].range,
            context=types.CodeActionContext(diagnostics=targets[:1]),
        )
    )
    titles = [a.title for a in actions or []]
    chosen = [a for a in actions or [] if title_part in a.title]
    assert chosen, titles
    fixed = _apply(text, chosen[0].edit, uri)
    assert fixed != text
    after = await save_and_wait(module_client, path, fixed, 2)
    assert len([d for d in after if d.code == code]) < len(targets)
    errors_before = sum(d.severity == types.DiagnosticSeverity.Error for d in diagnostics)
    errors_after = sum(d.severity == types.DiagnosticSeverity.Error for d in after)
    assert errors_after <= errors_before


@on_the_module_server
async def test_fix_all_applies_every_safe_fix(module_client: LanguageClient, own_folder: Path):
    text = HEAD + (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n"
        "        unused = self.proj(x)\n        h = self.proj(x)\n"
        "        return h * torch.sigmoid(h)\n"
    )
    path = own_folder / "many.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    diagnostics = await open_and_wait(module_client, path, text)
    assert {d.code for d in diagnostics} == {"FX010", "FX020"}
    actions = await module_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.fxls"]),
        )
    )
    assert [a.kind for a in actions] == ["source.fixAll.fxls"]
    fixed = _apply(text, actions[0].edit, uri)
    assert "unused" not in fixed and "F.silu(h)" in fixed
    after = await save_and_wait(module_client, path, fixed, 2)
    assert after == []
