"""Malformed messages log one line, not a traceback.

pygls logs each message it cannot read or answer with its traceback (``log.exception``, or
``traceback.format_exc()`` in the message: for a params mismatch, cattrs' nested exception
groups, some twenty lines each); a client sending thousands of them would bury the server's
stderr. Records of pygls' loggers keep their exception as one line instead: the innermost
error and where it was raised.
"""

from __future__ import annotations

import logging
import re
import traceback

_LIMIT = 400


class OneLineExceptions(logging.Filter):
    """For records of the loggers under ``prefix``: the exception joins the message's line."""

    def __init__(self, prefix: str = "pygls") -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.prefix):
            return True
        if record.exc_info:
            error = record.exc_info[1]
            if error is not None:
                record.msg = f"{record.getMessage()}: {describe(error)}"
                record.args = None
            record.exc_info = None
            record.exc_text = None
        message = record.getMessage()
        if "\n" in message:
            record.msg, record.args = one_line(message), None
        return True


#: the line of a formatted traceback that names the error (``Type: message``)
_ERROR_LINE = re.compile(r"^[\s|+-]*((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|"
                         r"Group|Interrupt|Exit)\w*(?::.*)?)$")


def one_line(message: str) -> str:
    """A multi-line message (one holding a formatted traceback) as its first line and the
    innermost error the traceback names."""
    first, *rest = message.splitlines()
    errors = [m.group(1).strip() for line in rest if (m := _ERROR_LINE.match(line))]
    text = f"{first.strip()}: {errors[-1]}" if errors else first.strip()
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def describe(error: BaseException) -> str:
    """``Type: message (at file:line)`` of the innermost error (the first leaf of exception
    groups), on one line."""
    outer = error
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    where = ""
    frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ else []
    if frames:
        where = f" (at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})"
    text = f"{type(error).__name__}: {error}{where}"
    if outer is not error:
        text = f"{type(outer).__name__}: {str(outer).splitlines()[0] if str(outer) else ''}; {text}"
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= _LIMIT else text[: _LIMIT - 3] + "..."


def install(logger: logging.Logger | None = None) -> None:
    """Put the filter on every handler of ``logger`` (the root logger by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, OneLineExceptions) for f in handler.filters):
            handler.addFilter(OneLineExceptions())
