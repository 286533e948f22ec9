"""fxcore.operator_schemas against torch.fx.operator_schemas, and Node.normalized_arguments."""

from __future__ import annotations

import inspect
import numbers
import operator
import typing
from typing import Any

import pytest
import torch
import torch.fx
import torch.fx.operator_schemas as ref

import fxcore
from fxcore import operator_schemas as ours


def _text(signatures: list[inspect.Signature] | None) -> list[str] | None:
    if signatures is None:
        return None
    # torch.fx evaluates "Generator" to typing.Generator; fxcore to torch.Generator
    return [str(s).replace("torch._C.Generator", "Generator") for s in signatures]


def _torch_callables() -> list[tuple[str, Any]]:
    found = []
    for namespace in (torch, torch.nn.functional):
        for key in dir(namespace):
            obj = getattr(namespace, key)
            if callable(obj) and obj is not torch.nonzero:
                found.append((f"{namespace.__name__}.{key}", obj))
    return found


def test_signatures_of_every_torch_callable_match_torch_fx() -> None:
    differing = []
    with_signatures = 0
    for name, obj in _torch_callables():
        expected, got = (
            _text(ref.get_signature_for_torch_op(obj)),
            _text(ours.get_signature_for_torch_op(obj)),
        )
        with_signatures += got is not None
        # torch.fx shows a script class object's repr where fxcore says Any
        if expected != got and "ScriptClass" not in str(expected):
            differing.append(name)
    assert with_signatures > 1000
    assert differing == []


def test_signature_names_self_input_and_marks_keyword_only_and_defaults() -> None:
    signatures = ours.get_signature_for_torch_op(torch.add)
    assert signatures is not None
    first = signatures[0]
    assert list(first.parameters) == ["input", "other", "alpha"]
    assert first.parameters["alpha"].kind is inspect.Parameter.KEYWORD_ONLY
    assert first.parameters["alpha"].default == 1
    assert first.parameters["input"].annotation is torch.Tensor


def test_from_makes_it_and_earlier_arguments_positional_only() -> None:
    signatures = ours.get_signature_for_torch_op(torch.Tensor.random_)
    expected = ref.get_signature_for_torch_op(torch.Tensor.random_)
    assert _text(signatures) == _text(expected)
    signatures = ours.get_signature_for_torch_op(torch.ops.aten.random_)
    with_from = [s for s in signatures or [] if "from" in s.parameters]
    assert with_from
    kinds = [p.kind for p in with_from[0].parameters.values()][:2]
    assert kinds == [inspect.Parameter.POSITIONAL_ONLY] * 2


def test_op_overloads_and_packets_and_return_schemas() -> None:
    overload = torch.ops.aten.add.Tensor
    packet = torch.ops.aten.add
    assert _text(ours.get_signature_for_torch_op(overload)) == _text(
        ref.get_signature_for_torch_op(overload)
    )
    assert _text(ours.get_signature_for_torch_op(packet)) == _text(
        ref.get_signature_for_torch_op(packet)
    )
    signatures, schemas = ours.get_signature_for_torch_op(torch.relu, return_schemas=True)
    assert signatures is not None and schemas is not None
    assert [str(s) for s in schemas] == [
        str(s) for s in ref.get_signature_for_torch_op(torch.relu, return_schemas=True)[1]
    ]
    assert ours.get_signature_for_torch_op(lambda x: x) is None
    assert ours.get_signature_for_torch_op(lambda x: x, return_schemas=True) == (None, None)


def test_nonzero_has_python_level_signatures() -> None:
    # torch.fx 2.13 returns None here (its override is dropped unless return_schemas=True)
    signatures = ours.get_signature_for_torch_op(torch.nonzero)
    assert [str(s) for s in signatures or []] == ["(input)", "(input, *, as_tuple: bool)"]


@pytest.mark.parametrize(
    "value",
    [
        [int, int],
        (int, bool),
        [bool, int],
        (torch.Tensor, torch.nn.Parameter),
        [int, str],
        [],
        (),
        int,
        "not a type",
    ],
    ids=repr,
)
def test_create_type_hint_matches_torch_fx(value: object) -> None:
    expected = ref.create_type_hint(value)
    got = ours.create_type_hint(value)
    # torch.fx builds typing.List/Tuple, fxcore list/tuple: the same hint either way
    assert typing.get_origin(got) == typing.get_origin(expected)
    assert typing.get_args(got) == typing.get_args(expected)
    if typing.get_origin(expected) is None:
        assert got == expected


_TYPE_CASES: list[tuple[Any, Any]] = [
    (int, int),
    (typing.List[int], int),  # noqa: UP006
    (list[int], int),
    (typing.List[int], typing.Tuple[int, int]),  # noqa: UP006
    (typing.List[int], typing.Tuple[int, ...]),  # noqa: UP006
    (typing.List[int], typing.Tuple[()]),  # noqa: UP006
    (typing.List[int], typing.List[bool]),  # noqa: UP006
    (typing.List[int], typing.Tuple[int, str]),  # noqa: UP006
    (typing.List[torch.Tensor], typing.List[torch.nn.Parameter]),  # noqa: UP006
    (typing.List[int], str),  # noqa: UP006
    (typing.Optional[int], int),  # noqa: UP045
    (typing.Optional[int], type(None)),  # noqa: UP045
    (typing.Union[int, str], float),  # noqa: UP007
    (int, torch.dtype),
    (numbers.Number, int),
    (numbers.Number, float),
    (float, int),
    (torch.Tensor, torch.nn.Parameter),
    (torch.nn.Parameter, torch.Tensor),
    (typing.Any, int),
]


@pytest.mark.parametrize(("signature_type", "argument_type"), _TYPE_CASES, ids=repr)
def test_type_matches_agrees_with_torch_fx(signature_type: Any, argument_type: Any) -> None:
    assert ours.type_matches(signature_type, argument_type) == ref.type_matches(
        signature_type, argument_type
    )


def _pair(result: Any) -> tuple[Any, Any] | None:
    return None if result is None else (tuple(result.args), dict(result.kwargs))


def _outcome(call: Any) -> Any:
    """What a call gives: its normalized pair, or the type of what it raised."""
    try:
        return _pair(call())
    except Exception as error:
        return type(error)


def _normalize_both(target: Any, args: tuple[Any, ...], **kw: Any) -> tuple[Any, Any]:
    return (
        _outcome(lambda: ref.normalize_function(target, args, **kw)),
        _outcome(lambda: ours.normalize_function(target, args, **kw)),
    )


def _f(a: int, b: int = 2, *, c: int = 3) -> int:
    return a + b + c


def _varargs(*args: int) -> int:
    return sum(args)


@pytest.mark.parametrize(
    ("target", "args", "options"),
    [
        (torch.nn.functional.relu, (1,), {}),
        (torch.nn.functional.relu, (1,), {"normalize_to_only_use_kwargs": True}),
        (torch.nn.functional.dropout, (1,), {"kwargs": {"p": 0.3}}),
        (torch.nn.functional.max_pool2d, (1, 3), {}),  # boolean_dispatched
        (torch.nn.functional.max_pool2d, (1, 3), {"kwargs": {"return_indices": True}}),
        (_f, (1,), {"kwargs": {"c": 5}}),
        (_f, (1, 2, 3), {}),
        (_varargs, (1, 2), {}),
        (torch.sin, (1,), {}),
        (torch.sin, (1, 2, 3), {}),
        (torch.relu, (1,), {"normalize_to_only_use_kwargs": True}),
        (torch.add, (1, 2), {"arg_types": (torch.Tensor, torch.Tensor)}),
        (torch.add, (1, 2), {"arg_types": (torch.Tensor, float)}),
        (torch.ops.aten.add.Tensor, (1, 2), {}),
        (torch.ops.aten.add.Tensor, (1, 2), {"normalize_to_only_use_kwargs": True}),
        (torch.Tensor.random_, (1, 2, 3), {}),
    ],
    ids=lambda v: getattr(v, "__name__", None) or repr(v)[:40],
)
def test_normalize_function_matches_torch_fx(
    target: Any, args: tuple[Any, ...], options: dict[str, Any]
) -> None:
    expected, got = _normalize_both(target, args, **options)
    assert got == expected


def test_normalize_function_on_an_ambiguous_operator_asks_for_types() -> None:
    with pytest.raises(RuntimeError, match="schema match was ambiguous"):
        ref.normalize_function(torch.add, (1, 2))
    with pytest.raises(RuntimeError, match="schema match was ambiguous"):
        ours.normalize_function(torch.add, (1, 2))


class _Holder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.conv = torch.nn.Conv2d(1, 1, 1)
        self.custom = _Custom()


class _Custom(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@pytest.mark.parametrize(
    ("target", "args", "only_kwargs"),
    [("lin", (1,), False), ("conv", (1,), True), ("custom", (1,), False)],
)
def test_normalize_module_matches_torch_fx(
    target: str, args: tuple[Any, ...], only_kwargs: bool
) -> None:
    root = _Holder()
    expected = ref.normalize_module(root, target, args, normalize_to_only_use_kwargs=only_kwargs)
    got = ours.normalize_module(root, target, args, normalize_to_only_use_kwargs=only_kwargs)
    assert _pair(got) == _pair(expected)


def test_normalize_module_of_a_missing_target_raises() -> None:
    with pytest.raises(RuntimeError, match="root did not have that target"):
        ours.normalize_module(_Holder(), "nope", (1,))


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.gelu(self.lin(x), approximate="tanh")
        z = torch.clamp(y, min=0.0)
        return torch.sum(z, 1, keepdim=True) + y.sum()


def _normalized(graph: Any, root: torch.nn.Module, **kw: Any) -> dict[str, Any]:
    return {n.name: _outcome(lambda n=n: n.normalized_arguments(root, **kw)) for n in graph.nodes}


@pytest.mark.parametrize("only_kwargs", [False, True])
def test_node_normalized_arguments_match_torch_fx(only_kwargs: bool) -> None:
    net = _Net()
    expected = _normalized(
        torch.fx.symbolic_trace(net).graph, net, normalize_to_only_use_kwargs=only_kwargs
    )
    got = _normalized(
        fxcore.symbolic_trace(net).graph, net, normalize_to_only_use_kwargs=only_kwargs
    )

    def names(found: dict[str, Any]) -> dict[str, Any]:
        # arguments that are nodes differ (two graphs): compare their names
        return {
            k: v
            if v is None or isinstance(v, type)
            else (
                tuple(getattr(a, "name", a) for a in v[0]),
                {n: getattr(a, "name", a) for n, a in v[1].items()},
            )
            for k, v in found.items()
        }

    assert names(got) == names(expected)
    assert got["gelu"] is not None and got["lin"] is not None
    assert got["clamp"] is RuntimeError  # two overloads accept it: types needed


def test_node_normalized_arguments_with_types_choose_the_overload() -> None:
    net = _Net()
    clamp = next(n for n in fxcore.symbolic_trace(net).graph.nodes if n.name == "clamp")
    pair = clamp.normalized_arguments(net, arg_types=(torch.Tensor,), kwarg_types={"min": float})
    assert pair is not None
    assert [a.name for a in pair.args] == ["gelu"]
    assert pair.kwargs == {"min": 0.0, "max": None}


def test_type_matches_knows_union_type_syntax() -> None:
    # torch.fx 2.13 only knows typing.Union: int | None never matches there
    assert ours.type_matches(int | None, int)
    assert ours.type_matches(torch.Tensor | None, type(None))
    assert not ours.type_matches(int | None, str)


def test_mutable_operation_is_refused_only_when_its_overload_writes() -> None:
    x, y = torch.ones(2), torch.empty(2)
    with pytest.raises(RuntimeError, match=r"mutable operation aten::sigmoid\.out"):
        ours.check_for_mutable_operation(torch.sigmoid, (x,), {"out": y})
    ours.check_for_mutable_operation(torch.sigmoid, (x,), {})
    ours.check_for_mutable_operation(operator.add, (x, x), {})
