"""Forward signatures and decorators as Hugging Face model code writes them, against torch.fx.

Self-contained look-alikes of the patterns (transformers is not installed here):
``forward(self, input_ids=None, attention_mask=None, **kwargs: Unpack[SomeKwargs])`` passing
``**kwargs`` on to submodules; ``functools.wraps`` decorators that read and write ``kwargs``
(``can_return_tuple``, ``check_model_inputs``); keyword-only and ``*args`` parameters; abstract
bases without ``forward``. For each: ``fxcore.symbolic_trace`` gives torch.fx's graph or its
error, and the recovering trace reports that error at the user code that hit it, without
failures of its own (formerly ``TypeError: keywords must be strings``).

How torch.fx treats these, which fxcore copies:
- ``**kwargs`` of ``forward`` becomes one placeholder (a Proxy); ``f(**kwargs)`` then asks it
  for ``keys()`` and iterating those fails ("Proxy object cannot be iterated").
- A decorated ``forward`` is analysed through ``inspect.unwrap`` (the inner signature names
  the placeholders) but the *wrapper* is what runs, with its code rebuilt to take them as
  plain positional parameters. A wrapper with fewer local names than the inner function has
  parameters cannot be rebuilt: ``ValueError: code: co_varnames is too small``.
"""

from __future__ import annotations

import functools
import linecache
from collections.abc import Callable
from typing import Any, TypedDict, Unpack

import pytest
import torch
import torch.fx
from torch import nn
from torch.fx._symbolic_trace import PHWithMeta as FxPHWithMeta

import fxcore
from fxcore._symbolic_trace import PHWithMeta
from fxcore.recovering import IssueKind, has_forward, trace_collecting_issues
from fxcore.source import SourceSpan


class ModelKwargs(TypedDict, total=False):
    output_attentions: bool
    return_dict: bool


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, hidden, attention_mask=None, **kwargs: Unpack[ModelKwargs]):
        return self.proj(hidden)


class PassesKwargsOn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Attention()

    def forward(self, input_ids=None, attention_mask=None, **kwargs: Unpack[ModelKwargs]):
        hidden = self.attn(input_ids, attention_mask=attention_mask, **kwargs)
        return hidden * 2


class MergesKwargs(nn.Module):
    def forward(self, x, **kwargs):
        options = {"scale": 2, **kwargs}
        return x * options["scale"]


def can_return_tuple(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        return_dict = kwargs.pop("return_dict", True)
        output = func(self, *args, **kwargs)
        return output if return_dict else (output,)

    return wrapper


def check_model_inputs(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        kwargs["output_attentions"] = False
        return func(self, *args, **kwargs)

    return wrapper


def pass_through(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


class ReturnsTuple(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @can_return_tuple
    def forward(self, input_ids=None, attention_mask=None, head_mask=None, **kwargs):
        return self.lin(input_ids)


class ChecksInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @check_model_inputs
    def forward(self, input_ids=None, **kwargs: Unpack[ModelKwargs]):
        return self.lin(input_ids)


class DecoratedPositional(nn.Module):
    """T5-style: many optional positional parameters, a plain pass-through decorator."""

    @pass_through
    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, labels=None):
        return input_ids * 2


class DecoratedKeywordOnly(nn.Module):
    @pass_through
    def forward(self, x, *, mask=None, **kwargs):
        return x


class KeywordOnly(nn.Module):
    def forward(self, x, *, scale=2.0):
        return x * scale


class StarArgs(nn.Module):
    def forward(self, x, *args):
        return x + 1


class PositionalOnly(nn.Module):
    def forward(self, x, y, /, z=None):
        return x + y


class UnusedKwargs(nn.Module):
    def forward(self, x, attention_mask=None, **kwargs: Unpack[ModelKwargs]):
        return x.relu()


class PreTrainedBase(nn.Module):
    """An abstract base: no forward of its own."""

    def init_weights(self) -> None:
        pass


class ConcreteModel(PreTrainedBase):
    def forward(self, x):
        return x - 1


def outcome(trace: Callable[[], Any]) -> tuple[str, str]:
    try:
        return "code", trace().code
    except Exception as error:
        return type(error).__name__, str(error)


def text_of(span: SourceSpan | None) -> str:
    assert span is not None
    line = linecache.getline(span.file, span.line).encode("utf-8")
    end = span.end_col if span.end_line == span.line else len(line.rstrip())
    return line[span.col : end].decode("utf-8")


ALL = [
    PassesKwargsOn,
    MergesKwargs,
    ReturnsTuple,
    ChecksInputs,
    DecoratedPositional,
    DecoratedKeywordOnly,
    KeywordOnly,
    StarArgs,
    PositionalOnly,
    UnusedKwargs,
    PreTrainedBase,
    ConcreteModel,
]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_fxcore_traces_or_fails_like_torch_fx(cls: type[nn.Module]) -> None:
    theirs = outcome(lambda: torch.fx.symbolic_trace(cls()))
    ours = outcome(lambda: fxcore.symbolic_trace(cls()))
    assert ours == theirs


TRACEABLE = [DecoratedPositional, KeywordOnly, StarArgs, PositionalOnly, UnusedKwargs]


@pytest.mark.parametrize("cls", TRACEABLE, ids=lambda c: c.__name__)
def test_recovering_trace_of_a_traceable_signature_is_clean(cls: type[nn.Module]) -> None:
    result = trace_collecting_issues(cls())
    assert result.issues == []
    assert result.graph_module is not None
    assert result.graph_module.code == torch.fx.symbolic_trace(cls()).code


#: (module, the issues the recovering trace reports: kind, message start, text at the span)
REPORTED: list[tuple[type[nn.Module], list[tuple[IssueKind, str, str]]]] = [
    (
        PassesKwargsOn,
        [
            (
                IssueKind.ITERATION,
                "Proxy object cannot be iterated",
                "self.attn(input_ids, attention_mask=attention_mask, **kwargs)",
            )
        ],
    ),
    (
        MergesKwargs,
        [(IssueKind.ITERATION, "Proxy object cannot be iterated", '{"scale": 2, **kwargs}')],
    ),
    (
        ReturnsTuple,
        [
            (IssueKind.ITERATION, "Proxy object cannot be iterated", "func(self, *args, **kwargs)"),
            # return_dict is kwargs.pop(...) of the traced kwargs
            (IssueKind.CONTROL_FLOW, "symbolically traced", "output if return_dict else (output,)"),
        ],
    ),
    (
        ChecksInputs,
        [
            (
                IssueKind.EXCEPTION,
                "TypeError: 'Proxy' object does not support item assignment",
                'kwargs["output_attentions"]',
            )
        ],
    ),
    (
        DecoratedKeywordOnly,
        [
            (
                IssueKind.EXCEPTION,
                "ValueError: code: co_varnames is too small",
                "@functools.wraps(func)",
            )
        ],
    ),
    (
        PreTrainedBase,
        [
            (
                IssueKind.EXCEPTION,
                'NotImplementedError: Module [PreTrainedBase] is missing the required "forward"',
                "",
            )
        ],
    ),
]


@pytest.mark.parametrize(("cls", "expected"), REPORTED, ids=[case[0].__name__ for case in REPORTED])
def test_recovering_trace_reports_what_torch_fx_hits(
    cls: type[nn.Module], expected: list[tuple[IssueKind, str, str]]
) -> None:
    result = trace_collecting_issues(cls())
    got = [
        (i.kind, i.message[: len(message)], text_of(i.span) if i.span else "")
        for i, (_, message, _) in zip(result.issues, expected, strict=False)
    ]
    assert got == expected
    assert len(result.issues) == len(expected)
    assert result.partial is True
    assert not any("keywords must be strings" in i.message for i in result.issues)


def test_kwargs_expansion_goes_on_with_no_keywords() -> None:
    result = trace_collecting_issues(PassesKwargsOn())
    assert result.graph_module is not None
    assert [(n.op, n.target) for n in result.graph.nodes if n.op == "call_module"] == [
        ("call_module", "attn.proj")
    ]
    x = torch.randn(2, 4)
    model = PassesKwargsOn()
    result = trace_collecting_issues(model)
    assert torch.equal(result.graph_module(x), model(x))


def test_torch_fx_error_names_proxy_not_the_recovering_class() -> None:
    theirs = outcome(lambda: torch.fx.symbolic_trace(ChecksInputs()))
    (issue,) = trace_collecting_issues(ChecksInputs()).issues
    assert issue.message == ": ".join(theirs)


def test_varnames_error_points_at_the_decorated_forward_too() -> None:
    (issue,) = trace_collecting_issues(DecoratedKeywordOnly()).issues
    texts = [text_of(span) for span in issue.stack]
    assert "@pass_through" in texts  # the decorated forward's first line
    assert texts[-1] == "@functools.wraps(func)"  # the wrapper that could not be rebuilt


def test_has_forward() -> None:
    assert has_forward(ConcreteModel()) and has_forward(ConcreteModel)
    assert not has_forward(PreTrainedBase()) and not has_forward(PreTrainedBase)
    assert not has_forward(nn.Module)
    assert has_forward(nn.Linear(2, 2)) and has_forward(ReturnsTuple)
    # what it stands for: torch.fx cannot trace a module without one
    with pytest.raises(NotImplementedError):
        torch.fx.symbolic_trace(PreTrainedBase())


def test_flat_concrete_args_tuple_for_star_args_forward() -> None:
    class Star(nn.Module):
        def forward(self, *args, **kwargs):
            return args[0] * 2 + args[1]

    theirs = torch.fx.symbolic_trace(Star(), concrete_args=(torch.fx.PH, torch.fx.PH))
    ours = fxcore.symbolic_trace(Star(), concrete_args=(fxcore.PH, fxcore.PH))
    assert ours.code == theirs.code
    assert [n.name for n in ours.graph.nodes] == [n.name for n in theirs.graph.nodes]


def test_placeholder_marks_become_node_attributes() -> None:
    def f(x, y):
        return x + y

    ours = fxcore.symbolic_trace(f, concrete_args={"y": PHWithMeta("k")})
    theirs = torch.fx.symbolic_trace(f, concrete_args={"y": FxPHWithMeta("k")})
    ours_keys = {n.name: getattr(n, "ph_key", None) for n in ours.graph.nodes}
    theirs_keys = {n.name: getattr(n, "ph_key", None) for n in theirs.graph.nodes}
    assert ours_keys == theirs_keys == {"x": None, "y_1": "k", "add": None, "output": None}
