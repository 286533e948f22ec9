"""Containers for node arguments: once a node holds them, editing them in place is an error.

Edits must go through ``node.args = ...`` so that use-def information stays right.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

import torch.utils._pytree as pytree

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


# pytree sees through them as through list and dict (flattening node args yields their items)
def _list_flatten(value: immutable_list) -> tuple[list[Any], None]:
    return list(value), None


def _list_unflatten(values: Iterable[Any], context: None) -> immutable_list:
    return immutable_list(values)


def _list_flatten_with_keys(value: immutable_list) -> tuple[list[tuple[Any, Any]], None]:
    return [(pytree.SequenceKey(i), v) for i, v in enumerate(value)], None


def _dict_flatten(value: immutable_dict) -> tuple[list[Any], list[Any]]:
    return list(value.values()), list(value.keys())


def _dict_unflatten(values: Iterable[Any], context: list[Any]) -> immutable_dict:
    return immutable_dict(zip(context, values, strict=True))


def _dict_flatten_with_keys(value: immutable_dict) -> tuple[list[tuple[Any, Any]], list[Any]]:
    return [(pytree.MappingKey(k), v) for k, v in value.items()], list(value.keys())


pytree.register_pytree_node(
    immutable_list,
    _list_flatten,
    _list_unflatten,
    serialized_type_name="fxcore.immutable_collections.immutable_list",
    flatten_with_keys_fn=_list_flatten_with_keys,
)
pytree.register_pytree_node(
    immutable_dict,
    _dict_flatten,
    _dict_unflatten,
    serialized_type_name="fxcore.immutable_collections.immutable_dict",
    flatten_with_keys_fn=_dict_flatten_with_keys,
)
