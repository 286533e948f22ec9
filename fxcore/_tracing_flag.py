"""Whether a symbolic trace is running, in its own module so that code below the tracer can ask.

``ProxyableClassMeta`` records a construction only during a trace, and the tracer sits above
it (it imports the meta to recognise proxyable instances); both read this flag from here.
"""

from __future__ import annotations

__all__ = ["is_fx_tracing", "set_fx_tracing"]

_is_fx_tracing = False


def is_fx_tracing() -> bool:
    return _is_fx_tracing


def set_fx_tracing(active: bool) -> bool:
    """Set the flag and return its previous value, for the tracer to restore when it ends."""
    global _is_fx_tracing
    previous, _is_fx_tracing = _is_fx_tracing, active
    return previous
