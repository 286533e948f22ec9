"""FX301's message for several breaks reached from one user line: each kind of break, its
explanation and torch's hint said once (the later ones of the same kind say "as (1)"), on
the reasons torch's own ``explain`` gives."""

from __future__ import annotations

import torch
import torch._dynamo

from fxls.analysis.pipeline.compile_trace import GraphBreak, several_breaks


def _noisy(x: torch.Tensor) -> torch.Tensor:
    x = x + 1
    print("first")
    x = x * 2
    print("second")
    return x - 1


def _breaks() -> list[GraphBreak]:
    torch._dynamo.reset()
    explained = torch._dynamo.explain(_noisy)(torch.ones(2))
    return [GraphBreak.parse(reason.reason) for reason in explained.break_reasons]


def test_breaks_of_one_kind_say_their_explanation_and_hint_once() -> None:
    first, second = _breaks()
    assert first.hints and first.words() == second.words()  # torch gives one reason twice
    said = several_breaks([(" inside `lib.f`", first), (" inside `lib.g`", second)])
    assert said == f"(1) inside `lib.f`: {first.words()}; (2) inside `lib.g`: as (1)"
    assert said.count("Hint:") == 1


def test_a_hint_already_given_is_not_repeated_for_another_kind() -> None:
    first, _ = _breaks()
    other = GraphBreak(first.gb_type + " again", "another explanation", first.hints, None, None)
    said = several_breaks([("", first), ("", other)])
    assert said.count("Hint:") == 1
    assert said.endswith(f"(2): {other.words(hint=False)}")
