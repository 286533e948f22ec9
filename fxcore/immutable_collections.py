"""Containers for node arguments: once a node holds them, editing them in place is an error.

Edits must go through ``node.args = ...`` so that use-def information stays right.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_list", "immutable_dict"]


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        f"'{type(self).__name__}' object does not support mutation. A node's args and "
        "kwargs change only by assignment: build a new value and set node.args = new_args"
    )


class immutable_list(list):
    __setitem__ = _refuse
    __delitem__ = _refuse
    __iadd__ = _refuse
    __imul__ = _refuse
    append = _refuse
    clear = _refuse
    extend = _refuse
    insert = _refuse
    pop = _refuse
    remove = _refuse
    reverse = _refuse
    sort = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> Any:
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):
    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> Any:
        return (immutable_dict, (tuple(self.items()),))
