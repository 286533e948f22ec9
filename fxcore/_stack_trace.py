"""torch.fx's ``node.stack_trace`` text, written from the user frames fxcore records anyway.

``Tracer(record_stack_traces=True)`` fills ``node.meta["stack_trace"]`` in the format of
Python tracebacks (``File "m.py", line 3, in forward`` and the line's text), one entry per
user frame from the traced ``forward`` down to the expression that made the node.
"""

from __future__ import annotations

import linecache
from collections.abc import Iterable

from fxcore.source import SourceSpan

__all__ = ["format_stack_trace"]


def format_stack_trace(spans: Iterable[SourceSpan]) -> str:
    """Traceback-style text of ``spans`` (outermost first), as torch.fx stores it."""
    entries = []
    for span in spans:
        entry = f'  File "{span.file}", line {span.line}, in {span.function}\n'
        text = linecache.getline(span.file, span.line).strip()
        if text:
            entry += f"    {text}\n"
        entries.append(entry)
    return "".join(entries).strip()
