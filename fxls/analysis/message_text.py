"""A diagnostic's message as every output shows it: one line, and the same on every run.

Exception texts are quoted into messages, and some hold what fits no one-line format or
changes from run to run: torch.fx's lint errors append the whole graph (``graph():`` and a
line per node), and reprs of functions and objects carry memory addresses
(``<function f at 0x7f3a...>``).
"""

from __future__ import annotations

import re

_GRAPH_DUMP = re.compile(r"\s*\n\s*graph\(\):?\n.*", re.DOTALL)
_AT_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{8,}\b")


def steady_message(text: str) -> str:
    """``text`` without a trailing graph dump or memory addresses, its lines joined."""
    text = _GRAPH_DUMP.sub("", text)
    text = _AT_ADDRESS.sub("", text)
    text = _ADDRESS.sub("0x…", text)
    if "\n" in text or "\r" in text:
        text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    return text
