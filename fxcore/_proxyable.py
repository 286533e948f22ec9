"""ProxyableClassMeta: classes whose construction from traced values is recorded.

``TensorPair(left, right)`` with a Proxy among its arguments becomes one ``call_function``
node calling the class, so the traced module builds the object at run time. Built from
plain values, it is an ordinary object; passed to a traced call, the tracer keeps it as a
constant attribute of the root (``_TensorPair_constant_0``).
"""

from __future__ import annotations

from typing import Any

from fxcore._tracing_flag import is_fx_tracing
from fxcore.node import map_aggregate
from fxcore.proxy import Proxy

__all__ = ["ProxyableClassMeta", "is_proxyable_instance"]

#: every class made with ProxyableClassMeta (insertion-ordered, as torch.fx keeps it)
_proxyable_classes: dict[type, None] = {}


class ProxyableClassMeta(type):
    def __init__(cls, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> None:
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if is_fx_tracing():
            proxy = _first_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", cls, args, kwargs)
        instance = cls.__new__(cls)  # type: ignore[call-overload]
        cls.__init__(instance, *args, **kwargs)  # type: ignore[misc]
        return instance


def _first_proxy(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy | None:
    found: list[Proxy] = []

    def look(value: Any) -> Any:
        if isinstance(value, Proxy) and not found:
            found.append(value)
        return value

    map_aggregate((args, kwargs), look)
    return found[0] if found else None


def is_proxyable_instance(value: object) -> bool:
    return type(value) in _proxyable_classes
