"""The recovering search goes on past what torch.fx stops at, one stop at a time: a size that
reached a torch call needing a number, an isinstance that is False for a Proxy, a parameter left
at None, and a forward that writes into its module (no model zoo needed)."""

from __future__ import annotations

import linecache

import torch
from torch import nn

from fxcore.recovering import IssueKind, trace_collecting_issues


def lines_of(result) -> list[tuple[IssueKind, str]]:
    return [(i.kind, linecache.getline(i.span.file, i.span.line).strip()) for i in result.issues]


class StaticSize(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        _batch, channels = x.shape
        scale = torch.sqrt(torch.tensor(channels))
        if x.mean() > 0:
            x = x * 2
        return x / scale


def test_past_a_size_that_reached_torch_tensor():
    found = lines_of(trace_collecting_issues(StaticSize()))
    assert found == [
        (IssueKind.CONTROL_FLOW, "if x.sum() > 0:"),
        (IssueKind.EXCEPTION, "scale = torch.sqrt(torch.tensor(channels))"),
        (IssueKind.CONTROL_FLOW, "if x.mean() > 0:"),
    ]


class ChecksTensor(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        torch._assert(isinstance(x, torch.Tensor), "x must be a tensor")
        for row in x:
            x = x + row
        return x


def test_past_an_isinstance_that_is_false_for_a_proxy():
    result = trace_collecting_issues(ChecksTensor())
    found = lines_of(result)
    assert found[:2] == [
        (IssueKind.CONTROL_FLOW, "if x.sum() > 0:"),
        (IssueKind.EXCEPTION, 'torch._assert(isinstance(x, torch.Tensor), "x must be a tensor")'),
    ]
    assert (IssueKind.ITERATION, "for row in x:") in found
    # torch.fx's own isinstance checks still saw a Proxy: the graph is a graph of x
    assert result.graph_module is not None


class Targets(nn.Module):
    def forward(self, x, targets=None):
        if targets is not None:
            for target in targets:
                data = {k: v for k, v in target.items()}
                x = x + data["boxes"]
        if x.mean() > 0:
            x = x * 2
        return x


def test_a_parameter_left_at_none_is_made_none_once_iterated():
    found = lines_of(trace_collecting_issues(Targets()))
    assert (IssueKind.ITERATION, "for target in targets:") in found
    assert (IssueKind.CONTROL_FLOW, "if x.mean() > 0:") in found
    assert not any(kind is IssueKind.EXCEPTION for kind, _ in found)  # no KeyError 'boxes'


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.anchors = [torch.ones(4)]
        self.calls = 0

    def forward(self, x):
        self.anchors = [a.to(x.dtype) * 2 for a in self.anchors]
        self.calls += 1
        if x.sum() > 0:
            x = x + 1
        if len(x) != 4:
            raise ValueError("four rows")
        return x * self.anchors[0]


def test_every_trace_of_the_search_starts_from_the_module_as_it_was():
    model = Cached()
    first = lines_of(trace_collecting_issues(model))
    # the search traced several times: each from the module as it was, so the last trace's
    # writes are one trace's (one call, anchors doubled once) and the same again next time
    assert model.calls == 1
    model.anchors, model.calls = [torch.ones(4)], 0
    assert lines_of(trace_collecting_issues(model)) == first
