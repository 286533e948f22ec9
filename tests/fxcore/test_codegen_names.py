"""Differential: submodule, parameter and buffer names that are not plain identifiers.

torch.fx writes an attribute path as ``self.name`` when ``name.isidentifier()``, else as
``getattr(self, "name")`` with the name pasted between double quotes, unescaped. So a
keyword (``class``), a double quote or a line break makes the generated code a SyntaxError,
raised by ``symbolic_trace`` itself; a space, a leading digit, a single quote or non-ASCII
letters work; a backslash compiles but may read another attribute (``"a\\b"`` holds a
backspace). fxcore must do the same: same code when it compiles, same error when not.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.fx
from torch import nn

import fxcore

#: name -> compiles (as torch.fx 2.13 does it)
NAMES = {
    'a"b': False,
    "a\nb": False,
    "class": False,
    "a b": True,
    "1x": True,
    "a'b": True,
    "ünï": True,
    "plain": True,
    "a\\b": True,  # compiles to "a\b", a backspace: another attribute (below)
    "a\\q": True,
}


def _module(name: str, kind: str) -> nn.Module:
    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if kind == "module":
                self.add_module(name, nn.Linear(4, 4))
            elif kind == "parameter":
                self.register_parameter(name, nn.Parameter(torch.ones(4)))
            else:
                self.register_buffer(name, torch.ones(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            held = getattr(self, name)
            return held(x) if kind == "module" else x + held

    return Holder()


def _outcome(fx: Any, module: nn.Module) -> tuple[str, str]:
    try:
        traced = fx.symbolic_trace(module)
    except Exception as error:  # the outcome compared is the error itself
        return type(error).__name__, str(error)
    return "code", traced.code


@pytest.mark.parametrize("kind", ["module", "parameter", "buffer"])
@pytest.mark.parametrize("name", list(NAMES))
def test_an_odd_attribute_name_gives_the_same_code_or_error(name: str, kind: str) -> None:
    module = _module(name, kind)
    expected = _outcome(torch.fx, module)
    assert _outcome(fxcore, module) == expected
    assert (expected[0] == "code") is NAMES[name], expected


@pytest.mark.parametrize("fx", [torch.fx, fxcore], ids=["torch.fx", "fxcore"])
def test_a_broken_name_fails_when_the_graph_module_is_built(fx: Any) -> None:
    """The graph traces; building its GraphModule (the code) is what fails."""
    module = _module('a"b', "module")
    graph = fx.Tracer().trace(module)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ['a"b']
    with pytest.raises(SyntaxError, match="unterminated string literal"):
        fx.GraphModule(module, graph)


@pytest.mark.parametrize("fx", [torch.fx, fxcore], ids=["torch.fx", "fxcore"])
def test_a_backslash_name_compiles_to_code_that_reads_another_attribute(fx: Any) -> None:
    traced = fx.symbolic_trace(_module("a\\b", "module"))
    assert 'getattr(self, "a\\b")' in traced.code
    with pytest.raises(AttributeError, match="no attribute 'a\x08'"):
        traced(torch.ones(2, 4))
