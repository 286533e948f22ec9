"""RewritingTracer: ``assert`` statements traced as ``torch._assert`` (against torch.fx's)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch
import torch.fx
import torch.fx.experimental.rewriter

import fxcore
from fxcore.experimental.rewriter import RewritingTracer

BOTH = pytest.mark.parametrize(
    "fx",
    [torch.fx, fxcore],
    ids=["torch.fx", "fxcore"],
)


def _tracer(fx: ModuleType) -> torch.fx.Tracer:
    if fx is torch.fx:
        return torch.fx.experimental.rewriter.RewritingTracer()
    return RewritingTracer()


class _Checks(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: int, z: int) -> torch.Tensor:
        assert y == z, "y and z differ"
        assert x.dim() == 2
        return torch.add(x, x)


@BOTH
def test_asserts_become_assert_nodes_that_check_at_run_time(fx: ModuleType) -> None:
    tracer = _tracer(fx)
    graph = tracer.trace(_Checks())
    gm = fx.GraphModule(tracer.root, graph, "gm")
    gm.graph.lint()
    asserts = [n for n in graph.nodes if n.target is torch._assert]
    assert [n.args[1] for n in asserts] == ["y and z differ", ""]
    torch.testing.assert_close(gm(torch.ones(2, 2), 3, 3), torch.full((2, 2), 2.0))
    with pytest.raises(AssertionError, match="y and z differ"):
        gm(torch.ones(2, 2), 3, 4)


def test_generated_code_is_torch_fx_code() -> None:
    codes = []
    for fx in (torch.fx, fxcore):
        tracer = _tracer(fx)
        graph = tracer.trace(_Checks())
        code = fx.GraphModule(tracer.root, graph, "gm").code
        # the def line differs: torch.fx prints string annotations as globals (_torch_Tensor_)
        codes.append([line for line in code.splitlines() if not line.startswith("def ")])
    assert codes[0] == codes[1]


def test_plain_symbolic_trace_of_the_same_module_fails() -> None:
    with pytest.raises(fxcore.TraceError):
        fxcore.symbolic_trace(_Checks())


def test_assert_nodes_point_at_the_assert_statement() -> None:
    graph = RewritingTracer().trace(_Checks())
    first = next(n for n in graph.nodes if n.target is torch._assert)
    span = first.meta["source"]
    line = _Checks.forward.__code__.co_firstlineno + 1
    assert (span.file, span.line) == (__file__, line)
    source_line = Path(__file__).read_text().splitlines()[line - 1]
    assert source_line[span.col : span.end_col] == 'assert y == z, "y and z differ"'
    eq = first.args[0]
    assert source_line[eq.meta["source"].col : eq.meta["source"].end_col] == "y == z"


class _Inner(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.shape[0] > 1, "batch of one"
        return x * 2


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Inner()
        self.norm = torch.nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().__call__ and self.inner(self.norm(x))


def test_submodules_are_rewritten_too_and_torch_nn_ones_kept() -> None:
    outer = _Outer()
    tracer = RewritingTracer()
    graph = tracer.trace(outer)
    assert [n.args[1] for n in graph.nodes if n.target is torch._assert] == ["batch of one"]
    assert tracer.root is not outer and isinstance(tracer.root, _Outer)
    assert tracer.root.norm is outer.norm  # a torch.nn leaf: untouched
    assert isinstance(tracer.root.inner, _Inner) and tracer.root.inner is not outer.inner
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["norm"]
    gm = fxcore.GraphModule(tracer.root, graph)
    outer.eval()
    gm.eval()
    x = torch.randn(4, 3)
    torch.testing.assert_close(gm(x), outer(x))
    with pytest.raises(AssertionError, match="batch of one"):
        gm(torch.randn(1, 3))
    # the original module is not changed: it still asserts in Python
    assert type(outer.inner) is _Inner
    with pytest.raises(AssertionError):
        outer.inner(torch.randn(1, 3))


def _make_scaled(scale: float):  # type: ignore[no-untyped-def]
    def scaled(x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 1, "vectors only"
        return x * scale

    return scaled


def test_a_closure_keeps_its_values_and_a_function_its_globals() -> None:
    tracer = RewritingTracer()
    graph = tracer.trace(_make_scaled(3.0))
    gm = fxcore.GraphModule(torch.nn.Module(), graph)
    torch.testing.assert_close(gm(torch.ones(2)), torch.full((2,), 3.0))
    with pytest.raises(AssertionError, match="vectors only"):
        gm(torch.ones(2, 2))


@fxcore.wrap
def _leaf(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def test_wrapped_functions_stay_leaves_in_rewritten_code() -> None:
    def uses_leaf(x: torch.Tensor) -> torch.Tensor:
        assert x.numel() > 0
        return _leaf(x)

    tracer = RewritingTracer()
    gm = fxcore.GraphModule(torch.nn.Module(), tracer.trace(uses_leaf))
    assert "_leaf" in gm.code
    assert _leaf(torch.zeros(1)).item() == 1.0


def test_a_function_without_source_is_refused() -> None:
    with pytest.raises(TypeError, match="only rewrite Python functions"):
        RewritingTracer().trace(torch.relu)
