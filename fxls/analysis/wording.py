"""Messages in the user's terms: what a library said about a traced value, without naming
fxls's or torch.fx's stand-ins, and with a hint where a known failure has a known way out.

While tracing, a forward's tensors are stand-ins (``fxcore``'s proxies); a library that
rejects one names its class ("Tensor type unknown to einops <class
'fxcore.recovering._RecoveringProxy'>") or its repr (``Proxy(getitem_2)``). The user wrote
neither: both are "a traced value".
"""

from __future__ import annotations

import re

_STAND_IN_CLASS = re.compile(r"<class '(?:fxcore|torch\.fx)(?:\.\w+)*\.\w*Proxy\w*'>")
_STAND_IN_VALUE = re.compile(r"\b(?:_Recovering)?Proxy\(\w+\)|'(?:_Recovering)?Proxy' object")
_EINOPS = re.compile(r"Tensor type unknown to einops a traced value")

#: (what the message contains, the hint added to it)
_HINTS: tuple[tuple[str, str], ...] = (
    ("co_varnames is too small",
     "`forward` is reached through a wrapper that takes `*args, **kwargs` (Hugging Face's "
     "`can_return_tuple`/`check_model_inputs` decorators, `GradientCheckpointingLayer`), "
     "and torch.fx cannot make graph inputs of such a signature: trace a module that calls "
     "this one with explicit arguments, or give the wrapped function's inputs with "
     "`# fxls: concrete {...}`"),
    ("unknown to einops",
     "einops cannot see through a traced value: use its layers (`einops.layers.torch."
     "Rearrange`), or keep the call out of the graph with `autowrap_functions` in "
     "[tool.fxls] (`torch.fx.wrap` in the model file)"),
)


def in_user_terms(message: str) -> str:
    """``message`` with stand-ins named "a traced value", and a hint where one is known."""
    text = _STAND_IN_CLASS.sub("a traced value", message)
    text = _STAND_IN_VALUE.sub("a traced value", text)
    text = _EINOPS.sub("einops does not know the type of a traced value", text)
    for marker, hint in _HINTS:
        if marker in message and hint not in text:
            text = f"{text}; {hint}"
    return text
