"""Hover and inlay hints where real model code spends its lines: calls of submodules that
are traced through (no node of their own), lines run by many block instances, a block used
at several resolutions, and a module with an FX error (shapes while the user fixes it) —
real client, real server, real worker."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import on_the_module_server, open_and_wait

# ViT's Block in miniature: `ls1` is an nn.Identity (a leaf: one call_module node spanning
# `self.ls1(...)`), while `norm1` and `attn` are traced through and make no node on this
# line. Hovering `self.norm1` used to show the `ls1` node.
MODEL = """import torch
from torch import nn


class Norm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return self.proj(attn @ v)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = Norm(dim)
        self.attn = Attention(dim)
        self.ls1 = nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x


class Stage(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, x):
        out = self.conv(x)
        return out + x


# fxls: args (torch.randn(1, 5, 8),)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*(Block(8) for _ in range(6)))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        feats = self.blocks(x)
        return self.head(feats)


# fxls: args (torch.randn(1, 4, 16, 16),)
class Pyramid(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage = Stage(4)
        self.down = nn.Conv2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x):
        y = self.stage(x)
        z = self.stage(self.down(y))
        if z.sum() > 0:
            z = z * 2
        return z
"""


def _position(needle: str, offset: int = 0) -> types.Position:
    index = MODEL.index(needle) + offset
    before = MODEL[:index]
    return types.Position(before.count("\n"), index - (before.rfind("\n") + 1))


async def _hover(client: LanguageClient, path: Path, needle: str, offset: int = 0) -> str:
    hover = await client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(path.as_uri()), _position(needle, offset)))
    assert hover is not None, needle
    return hover.contents.value


@on_the_module_server
async def test_hover_on_submodule_calls(module_client: LanguageClient, own_folder: Path) -> None:
    path = own_folder / "vit.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(module_client, path, MODEL)

    # a Sequential of blocks, traced through: the submodule, its nodes, in and out
    text = await _hover(module_client, path, "self.blocks(x)", 6)
    assert "submodule `blocks`" in text and "torch.nn.modules.container.Sequential" in text
    assert "in `Net`" in text and "- module: `blocks`" in text
    assert "- inputs: `x` `float32[1, 5, 8]`" in text
    assert "- outputs: `add_5` `float32[1, 5, 8]`" in text
    assert "command:fxls.showGraph" in text

    # the `ls1` mix-up: on `self.norm1` the hover is norm1's call, six instances in one summary
    text = await _hover(module_client, path, "self.norm1(x)", 6)
    assert "submodule `norm1`" in text and "ls1" not in text, text
    assert "- instances: 6 (`blocks.0.norm1`, `blocks.1.norm1`, … `blocks.5.norm1`)" in text
    assert "- nodes: 4 per instance" in text
    assert "- shapes: `float32[1, 5, 8]` → `float32[1, 5, 8]` x6" in text
    text = await _hover(module_client, path, "self.attn(", 6)
    assert "submodule `attn`" in text and "ls1" not in text
    # on `self.ls1` itself: its own node, one summary for the six instances
    text = await _hover(module_client, path, "self.ls1(", 6)
    assert text.startswith("**ls1** · `call_module` · in `Block`"), text
    assert "**blocks_0_ls1** · `call_module` · in `Net`" in text
    assert "This expression ran 6 times in `Net`" in text
    assert "- instances: `blocks.0.ls1`, `blocks.1.ls1`, … `blocks.5.ls1`" in text
    assert "- shapes: `float32[1, 5, 8]` x6" in text
    assert text.count("\n---\n") == 1  # Block's own node, then Net's summary


@on_the_module_server
async def test_inlay_hints_on_calls_several_shapes_and_partial_graphs(
        module_client: LanguageClient, own_folder: Path) -> None:
    path = own_folder / "vit.py"
    path.write_text(MODEL, encoding="utf-8")
    await open_and_wait(module_client, path, MODEL)
    hints = await module_client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(path.as_uri()),
        range=types.Range(types.Position(0, 0), types.Position(200, 0))))
    labels = {(h.position.line, h.position.character): str(h.label) for h in hints}

    def at(needle: str) -> str:
        position = _position(needle, needle.index(" ="))
        return labels.get((position.line, position.character), "")

    # a call of a submodule traced through: what it returned
    assert at("feats = self.blocks(x)") == ": [1, 5, 8]"
    # a block used at two resolutions: both shapes
    assert at("out = self.conv(x)") == ": [1, 4, 16, 16] | [1, 4, 8, 8]"
    # Pyramid has an FX001 (`if z.sum() > 0`): its shapes are still there
    assert at("y = self.stage(x)") == ": [1, 4, 16, 16]"
    assert at("z = self.stage(self.down(y))") == ": [1, 4, 8, 8]"
