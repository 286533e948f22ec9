"""Reading the user's objects (what a pass returned) without letting them raise into fxls."""

from __future__ import annotations

from typing import Any


def attribute(value: Any, name: str, default: Any = None) -> Any:
    """``value.name``, else ``default``: a user's ``__getattr__`` may raise anything, not
    only AttributeError (torch's Inductor ``GraphView`` raises KeyError)."""
    try:
        return getattr(value, name, default)
    except Exception:
        return default
