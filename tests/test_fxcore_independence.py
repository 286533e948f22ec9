"""fxcore is ours: no module of it uses torch.fx, except the interop bridge.

``import torch`` itself loads torch.fx, so this is checked in the source: no import of
torch.fx and no ``torch.fx`` attribute access anywhere in fxcore but ``fxcore/interop.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

FXCORE = Path(__file__).resolve().parent.parent / "fxcore"


def _is_torch_fx_use(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "torch.fx" or a.name.startswith("torch.fx.") for a in node.names)
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module == "torch":
            return any(a.name == "fx" for a in node.names)
        return node.module == "torch.fx" or node.module.startswith("torch.fx.")
    return (
        isinstance(node, ast.Attribute) and node.attr == "fx"
        and isinstance(node.value, ast.Name) and node.value.id == "torch"
    )


def _uses_torch_fx(tree: ast.AST) -> list[int]:
    return sorted(node.lineno for node in ast.walk(tree) if _is_torch_fx_use(node))


def test_no_fxcore_module_but_interop_uses_torch_fx():
    offenders = {}
    for path in sorted(FXCORE.rglob("*.py")):
        if path.name == "interop.py":
            continue
        lines = _uses_torch_fx(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            offenders[str(path.relative_to(FXCORE))] = lines
    assert offenders == {}


def test_the_check_would_see_a_use():
    assert _uses_torch_fx(ast.parse("import torch.fx\nfrom torch import fx\ntorch.fx.wrap")) == [
        1, 2, 3
    ]
