"""The values fxls makes up for constructor arguments nothing in the project supplies, made
recognisable: a trace that fails on one of them failed on fxls's guess, not on the user's
code (``guess_blame`` finds them in the failing expression).

- ``GuessedInt``: a guessed size or count, an ``int`` in every respect but its type (small
  ints are shared objects: a plain ``32`` could not be told from the model's own ``32``);
- ``StandIn``: a module for a module argument, an identity (a leaf, one ``call_module`` node
  as ``nn.Identity`` is), optionally carrying the attributes the constructor reads and
  methods that return their first argument;
- ``ShapedStandIn``: a stand-in whose output is what its caller unpacks (a tuple of ``n``,
  a dict with the keys the caller reads or several feature maps), traced through so that
  the caller gets a real tuple or dict.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch


class GuessedInt(int):
    """A size or count fxls guessed (an ``int``; arithmetic on it gives plain ints)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:  # deep copies and pickles keep the plain value
        return (int, (int(self),))


# Python's own messages name the type ("'int' object is not callable"): the user's terms
GuessedInt.__name__ = "int"


def _first_argument(*args: Any, **kwargs: Any) -> Any:
    if args:
        return args[0]
    return next(iter(kwargs.values()), None)


class StandIn(torch.nn.Identity):
    """An identity module standing in for a module argument (any constructor arguments)."""

    #: traced as one ``call_module`` node, as ``nn.Identity`` is
    __fxls_leaf__ = True

    def __init__(self, *args: Any, attributes: dict[str, Any] | None = None,
                 methods: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__()
        for name, value in (attributes or {}).items():
            object.__setattr__(self, name, value)
        for name in methods:  # ``self.transform.postprocess(x, ...)`` gives x back
            object.__setattr__(self, name, _first_argument)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return _first_argument(*args, **kwargs)


class ShapedStandIn(StandIn):
    """A stand-in returning what its caller unpacks: ``a, b = m(x, y)`` gets ``(x, y)`` (an
    empty dict for a value the caller takes as a mapping, a list for one it iterates),
    ``m(x)["out"]`` a dict of ``x`` under the keys read, ``m(x).values()`` several maps."""

    __fxls_leaf__ = False  # traced through: its caller gets a real tuple or dict

    def __init__(self, *args: Any, unpacked: int | None = None, keys: tuple[str, ...] = (),
                 items: tuple[str | None, ...] = (), listed: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unpacked = unpacked
        self.keys = keys
        #: the caller measures or iterates the output: a list
        self.listed = listed
        #: what the caller takes each unpacked value as ("mapping", "sequence", None)
        self.items = items

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        first = _first_argument(*args, **kwargs)
        if self.keys:
            return OrderedDict((key, first) for key in self.keys)
        if self.unpacked:
            given = [*args, *kwargs.values()]
            values = (given + [first] * self.unpacked)[:self.unpacked]
            for index, kind in enumerate(self.items[:self.unpacked]):
                if kind == "mapping":  # ``losses.update(b)``: a real module's dict of losses
                    values[index] = OrderedDict()
                elif kind == "sequence":
                    values[index] = _listed(values[index])
            return tuple(values)
        return _listed(first) if self.listed else first


def _listed(value: Any) -> list[Any]:
    """A list of outputs: the input's items when it is a list already (feature maps)."""
    return list(value) if isinstance(value, list | tuple) else [value]


class StandInList(torch.nn.ModuleList):
    """Stand-ins for a list of modules (``len(self.heads)``, ``self.heads[i](x)``): traced
    through, so that calling the list itself fails as a list's call does."""

    def __init__(self, length: int) -> None:
        super().__init__(StandIn() for _ in range(length))


def guessed(value: Any) -> Any:
    """``value`` as a recognisable guess: ints (also inside tuples and lists) tagged."""
    if type(value) is int:
        return GuessedInt(value)
    if type(value) in (tuple, list):
        return type(value)(guessed(v) for v in value)
    return value


def is_guess(value: Any) -> bool:
    """Whether ``value`` is something fxls made up: a guessed int, a stand-in (or its class),
    a sequence of guesses, a module list of stand-ins."""
    if isinstance(value, GuessedInt | StandIn) or value is StandIn:
        return True
    if isinstance(value, tuple | list) and value:
        return all(is_guess(v) for v in value)
    if isinstance(value, torch.nn.ModuleList | torch.nn.Sequential) and len(value):
        return all(isinstance(m, StandIn) for m in value)
    return False
