"""Unique, valid Python names for nodes and for the globals of generated code.

Names follow torch.fx exactly: ``add``, ``add_1``...; ``layers.0`` -> ``layers_0``;
keywords, builtins and the names generated code relies on (``torch``, ``inf``...) are
never shadowed.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from typing import Any

import torch

_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_LOWER_THEN_UPPER = re.compile(r"(?<=[a-z])([A-Z])")

#: names generated code may use without defining them, with the object each stands for
CUSTOM_BUILTINS: dict[str, object] = {
    "inf": math.inf,
    "nan": math.nan,
    "NoneType": type(None),
    "torch": torch,
    "device": torch.device,
    "fx_pytree": object(),  # reserved for compatibility with torch.fx's generated code
    "pytree": object(),
}

_reserved: dict[str, object] = {word: object() for word in keyword.kwlist}
_reserved.update(builtins.__dict__)
_reserved.update(CUSTOM_BUILTINS)


def snake_case(text: str) -> str:
    """``pascalCase`` -> ``pascal_case``; ``ALL_CAPS`` -> ``all_caps``."""
    return _LOWER_THEN_UPPER.sub(r"_\1", text).lower()


def is_magic(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class Namespace:
    """Hands out unique names; each object gets one name, builtins are never shadowed."""

    __slots__ = ("_base_count", "_obj_to_name", "_used_names")

    def __init__(self) -> None:
        self._obj_to_name: dict[object, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
            assert match is not None
        base, number = match.group(1, 2)
        used = self._used_names
        if number is None or candidate in used:
            num = self._base_count.get(base, 0)
            if _reserved.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(number)
        while candidate in used:
            num += 1
            candidate = f"{base}_{num}"
        used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: object) -> None:
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")

    def _rename_object(self, obj: object, name: str) -> None:
        self._obj_to_name[obj] = name
        self._used_names.add(name)

    def forget(self, obj: object) -> None:
        self._obj_to_name.pop(obj, None)
