"""The recovering trace reports what torch.fx would hit, and nothing else.

Differential, construct by construct, with torch.fx as the reference:

- what torch.fx traces (sizes from ``x.shape`` passed to factory functions, views,
  ``F.interpolate``...) gives no issue, and the recovering trace builds the graph
  ``fxcore.symbolic_trace`` and torch.fx build;
- what torch.fx refuses (``int(x.sum())``, ``len(x)``, ``range(x.size(0))``, ``if``...) is
  still reported, as the kind of problem torch.fx hits, at the expression that hit it.

Why the first needed care: torch's C argument parser asks a value in a size argument for
``__index__`` before it looks at ``__torch_function__``. torch.fx's Proxy has no
``__index__``, so the parser falls back to dispatching the call; the recovering proxy has one
(``range(n)`` must go on with a stand-in), and used to answer that probe: a false "turns a
traced value into a Python value", and for an ``int`` parameter (``torch.eye(n)``) a call run
eagerly with n=1 instead of a node.
"""

# Sizes are unpacked whole (``B, C, H, W = x.shape``), as model code does.
# ruff: noqa: RUF059

from __future__ import annotations

import linecache
import operator
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.fx
import torch.nn.functional as F

import fxcore
from fxcore.recovering import IssueKind, TraceIssue, trace_collecting_issues
from fxcore.source import SourceSpan

# -- constructs torch.fx traces -------------------------------------------------------------


def zeros_tuple_with_device(x):
    B, C, H, W = x.shape
    return torch.zeros((B, H, W), device=x.device)


def zeros_list(x):
    B, C, H, W = x.shape
    return torch.zeros([B, C])


def zeros_nested_parentheses(x):
    B, C, H, W = x.shape
    return torch.zeros(((B), (C * H), W))


def zeros_one_size_with_dtype(x):
    B = x.shape[0]
    return torch.zeros(B, dtype=torch.float64)


def zeros_size_keyword(x):
    B, C, H, W = x.shape
    return torch.zeros(size=(B, C))


def zeros_of_size_proxy(x):
    return torch.zeros(x.size())


def zeros_of_unpacked_size_in_tuple(x):
    B, C, H, W = x.shape
    size = (B, C)
    return torch.zeros((*size, 4))


def full(x):
    B, C, H, W = x.shape
    return torch.full((B, C), 1.0)


def full_with_traced_fill(x):
    B, C, H, W = x.shape
    return torch.full((B, C), H)


def empty(x):
    B, C, H, W = x.shape
    return torch.empty((B, C)).fill_(0.0)


def ones_one_size(x):
    return torch.ones(x.size(0)) * x.shape[1]


def rand_shape(x):
    B, C, H, W = x.shape
    return torch.rand((B, C)) * 0


def eye(x):
    B, C, H, W = x.shape
    return torch.eye(H)


def eye_two_sizes(x):
    B, C, H, W = x.shape
    return torch.eye(H, W, dtype=x.dtype)


def randperm(x):
    B, C, H, W = x.shape
    return torch.randperm(H * W).sort().values


def randint(x):
    B, C, H, W = x.shape
    return torch.randint(H, (B, C)) * 0


def arange(x):
    B, C, H, W = x.shape
    return torch.arange(H, device=x.device)


def linspace(x):
    B, C, H, W = x.shape
    return torch.linspace(0.0, 1.0, W)


def new_zeros(x):
    B, C, H, W = x.shape
    return x.new_zeros((B, C))


def new_full(x):
    B, C, H, W = x.shape
    return x.new_full((B, C), 2.0)


def new_ones_unpacked(x):
    size = (x.shape[0], x.shape[1])
    return x.new_ones(*size)


def view_minus_one(x):
    B = x.shape[0]
    return x.view(B, -1)


def reshape(x):
    B, C, H, W = x.shape
    return x.reshape(B, H * W, C)


def torch_reshape(x):
    B, C, H, W = x.shape
    return torch.reshape(x, (B, -1))


def expand(x):
    B, C, H, W = x.shape
    return x[:, 0].expand(B, -1, -1)


def broadcast_to(x):
    B, C, H, W = x.shape
    return torch.broadcast_to(x, (B, C, H, W))


def interpolate_size(x):
    B, C, H, W = x.shape
    return F.interpolate(x, size=(H * 2, W * 2))


def pad(x):
    B, C, H, W = x.shape
    return F.pad(x, (0, W, 0, H))


def narrow(x):
    return torch.narrow(x, 0, 0, x.size(0))


def select_last(x):
    return torch.select(x, 0, x.size(0) - 1)


def sum_over_traced_dim(x):
    return torch.sum(x, x.dim() - 1)


def topk(x):
    return torch.topk(x, x.size(-1)).values


def tile(x):
    return torch.tile(x, (x.size(0),))


def list_times_traced(x):
    return [0] * x.size(0)


def buffer_new_zeros(x):
    return _BUFFER.new_zeros(x.size(0))


_BUFFER = torch.ones(3)

TRACEABLE: list[Callable[[torch.Tensor], Any]] = [
    zeros_tuple_with_device,
    zeros_list,
    zeros_nested_parentheses,
    zeros_one_size_with_dtype,
    zeros_size_keyword,
    zeros_of_size_proxy,
    zeros_of_unpacked_size_in_tuple,
    full,
    full_with_traced_fill,
    empty,
    ones_one_size,
    rand_shape,
    eye,
    eye_two_sizes,
    randperm,
    randint,
    arange,
    linspace,
    new_zeros,
    new_full,
    new_ones_unpacked,
    view_minus_one,
    reshape,
    torch_reshape,
    expand,
    broadcast_to,
    interpolate_size,
    pad,
    narrow,
    select_last,
    sum_over_traced_dim,
    topk,
    tile,
    list_times_traced,
    buffer_new_zeros,
]


def node_list(graph: Any) -> list[tuple[Any, ...]]:
    return [
        (n.op, n.name, n.target, str(n.args), str(n.kwargs), sorted(u.name for u in n.users))
        for n in graph.nodes
    ]


@pytest.mark.parametrize("fn", TRACEABLE, ids=lambda f: f.__name__)
def test_traceable_construct_has_no_issue_and_the_same_graph(fn: Callable[..., Any]) -> None:
    theirs = torch.fx.symbolic_trace(fn)
    ours = fxcore.symbolic_trace(fn)
    result = trace_collecting_issues(fn)
    assert result.issues == []
    assert result.partial is False
    assert result.graph_module is not None
    assert result.graph_module.code == ours.code == theirs.code
    assert node_list(result.graph) == node_list(ours.graph) == node_list(theirs.graph)


def test_the_graph_runs_like_eager() -> None:
    x = torch.randn(2, 3, 4, 5)
    for fn in (zeros_tuple_with_device, eye_two_sizes, reshape, interpolate_size, pad):
        traced = trace_collecting_issues(fn).graph_module
        assert traced is not None
        assert torch.equal(traced(x), fn(x)), fn.__name__


# -- constructs torch.fx refuses ------------------------------------------------------------


def int_of_sum(x):
    return x * int(x.sum())


def float_of_mean(x):
    return x * float(x.mean())


def len_of_tensor(x):
    return x * len(x)


def if_on_sum(x):
    if x.sum() > 0:
        return x + 1
    return x


def range_of_size(x):
    for i in range(x.size(0)):
        x = x + i
    return x


def list_index_by_size(x):
    return [x, x][x.size(0) - 2]


def factory_of_explicit_int(x):
    return torch.zeros(int(x.size(0)))


def ones_of_two_sizes(x):
    B, C, H, W = x.shape
    return torch.ones(B, C)


def zeros_of_star_shape(x):
    return torch.zeros(*x.shape)


def tensor_of_sizes(x):
    return torch.tensor([x.size(0)])


#: (function, kind of the first issue, its conversion, the text its span covers)
REFUSED: list[tuple[Callable[..., Any], IssueKind, str | None, str]] = [
    (int_of_sum, IssueKind.PYTHON_VALUE, "int", "int(x.sum())"),
    (float_of_mean, IssueKind.PYTHON_VALUE, "float", "float(x.mean())"),
    (len_of_tensor, IssueKind.PYTHON_VALUE, "len", "len(x)"),
    (if_on_sum, IssueKind.CONTROL_FLOW, None, "x.sum() > 0"),
    (range_of_size, IssueKind.PYTHON_VALUE, "index", "range(x.size(0))"),
    (list_index_by_size, IssueKind.PYTHON_VALUE, "index", "[x, x][x.size(0) - 2]"),
    (factory_of_explicit_int, IssueKind.PYTHON_VALUE, "int", "int(x.size(0))"),
    (ones_of_two_sizes, IssueKind.EXCEPTION, None, "torch.ones(B, C)"),
    (zeros_of_star_shape, IssueKind.ITERATION, None, "torch.zeros(*x.shape)"),
    (tensor_of_sizes, IssueKind.PYTHON_VALUE, "len", "torch.tensor([x.size(0)])"),
]


def text_of(span: SourceSpan | None) -> str:
    assert span is not None
    line = linecache.getline(span.file, span.line).encode("utf-8")
    assert span.end_line == span.line
    return line[span.col : span.end_col].decode("utf-8")


def raised(fn: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize(
    ("fn", "kind", "conversion", "text"), REFUSED, ids=[case[0].__name__ for case in REFUSED]
)
def test_refused_construct_is_reported_where_torch_fx_fails(
    fn: Callable[..., Any], kind: IssueKind, conversion: str | None, text: str
) -> None:
    theirs = raised(lambda: torch.fx.symbolic_trace(fn))
    ours = raised(lambda: fxcore.symbolic_trace(fn))
    assert (type(ours).__name__, str(ours)) == (type(theirs).__name__, str(theirs))
    result = trace_collecting_issues(fn)
    assert result.partial is True
    first = result.issues[0]
    assert (first.kind, first.conversion, text_of(first.span)) == (kind, conversion, text)
    if kind is IssueKind.EXCEPTION:  # torch.fx's own error, not a consequence of a stand-in
        assert first.message == f"{type(theirs).__name__}: {theirs}"
        assert first.after_recovery is False


def test_range_of_a_size_is_reported_once_and_the_loop_runs_once() -> None:
    result = trace_collecting_issues(range_of_size)
    assert [(i.kind, i.conversion) for i in result.issues] == [(IssueKind.PYTHON_VALUE, "index")]
    assert result.graph is not None
    adds = [n for n in result.graph.nodes if n.target is operator.add]
    assert len(adds) == 1  # range(1): one iteration, adding the stand-in's 0


def test_star_unpacking_is_one_iteration_issue_not_also_len() -> None:
    result = trace_collecting_issues(zeros_of_star_shape)
    assert [i.kind for i in result.issues if i.kind is not IssueKind.EXCEPTION] == [
        IssueKind.ITERATION
    ]


def test_a_callee_fxcore_cannot_name_still_traces_size_lists() -> None:
    def zeros_through_getattr(x):
        B, C, H, W = x.shape
        return getattr(torch, "zeros")((B, C))  # a callee read from a call

    result = trace_collecting_issues(zeros_through_getattr)
    assert result.issues == []
    assert result.graph_module is not None
    assert result.graph_module.code == torch.fx.symbolic_trace(zeros_through_getattr).code


def test_issue_records_are_plain_trace_issues() -> None:
    result = trace_collecting_issues(int_of_sum)
    assert all(isinstance(i, TraceIssue) for i in result.issues)
    consumed = [n.name for n in result.graph.nodes if "consumed_by_issue" in n.meta]
    assert consumed == ["sum_1"]
