"""IPython's own syntax in a notebook cell, made into Python that does nothing, line for line.

A line magic (``%timeit f()``), a shell line (``!pip install timm``), help (``model?``,
``??f``), an autocall (``/f x``) and an assignment from a magic or the shell
(``files = !ls``) are IPython's, not Python's. Each such line becomes ``pass`` at its
indentation (an assignment ``name = None``), so every other line keeps its number and its
columns. A cell magic (``%%bash``) hands the whole cell to another language: every line of
it becomes blank, except for the magics that run their body as Python (``%%time``,
``%%capture``...), whose first line alone is neutralised.

Only a line that starts a statement can be IPython's: a ``%`` or ``!`` on a line that
continues a string, a bracket or a backslash from the line before is Python's.

>>> neutralise_cell("!pip install timm\\nx = 1\\nfiles = !ls\\n")
'pass\\nx = 1\\nfiles = None\\n'
>>> neutralise_cell("%%bash\\necho hi\\n")
'\\n\\n'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: cell magics whose body IPython runs as Python: analysed like any cell
PYTHON_CELL_MAGICS = frozenset(
    {"time", "timeit", "capture", "prun", "debug", "python", "python3"})

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_CELL_MAGIC = re.compile(r"%%(\w+)")
_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*)\s*=\s*[%!]")
_HELP = re.compile(r"\?{0,2}[\w.]*\?{0,2}")
_IPYTHON_STARTS = ("%", "!", "?", "/", ",", ";")


def neutralise_cell(source: str) -> str:
    """``source`` (one cell) with IPython's lines made into Python that does nothing; the
    same lines, each with its own line break."""
    lines = [line for line in _LINE.findall(source) if line]
    first = next((line for line in lines if line.strip()), "")
    magic = _CELL_MAGIC.match(first)
    if magic is not None and magic.group(1) not in PYTHON_CELL_MAGICS:
        return "".join(_line_break(line) for line in lines)
    scanner = _Scanner()
    out = []
    for line in lines:
        if scanner.at_statement_start and _is_ipython(line.strip()):
            out.append(_neutralised(line))
        else:
            scanner.feed(line)
            out.append(line)
    return "".join(out)


def _is_ipython(body: str) -> bool:
    if body.startswith(_IPYTHON_STARTS) or _ASSIGNED.match(body):
        return True
    return body.endswith("?") and _HELP.fullmatch(body) is not None


def _neutralised(line: str) -> str:
    content = line.rstrip("\r\n")
    indent = content[: len(content) - len(content.lstrip())]
    assigned = _ASSIGNED.match(content.strip())
    statement = f"{assigned.group(1)} = None" if assigned else "pass"
    return indent + statement + _line_break(line)


def _line_break(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


@dataclass(slots=True)
class _Scanner:
    """Whether the next line starts a statement: outside strings and brackets, and not
    after a backslash. A tokenizer cannot say it here: the cell is not Python yet."""

    quote: str = ""  # the open string's quote ('"', "'''"...), "" outside strings
    depth: int = 0  # open brackets
    continued: bool = False  # the line ended in a backslash outside a string

    @property
    def at_statement_start(self) -> bool:
        return not (self.quote or self.depth or self.continued)

    def feed(self, line: str) -> None:
        text = line.rstrip("\r\n")
        index = 0
        while index < len(text):
            char = text[index]
            if self.quote:
                if char == "\\":
                    index += 2
                    continue
                if text.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = ""
                    continue
            elif char == "#":
                text = text[:index]  # a backslash in a comment continues nothing
                break
            elif char in "'\"":
                triple = char * 3
                self.quote = triple if text.startswith(triple, index) else char
                index += len(self.quote)
                continue
            elif char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            index += 1
        ends_in_backslash = text.endswith("\\") and _odd_backslashes(text)
        if self.quote in ("'", '"') and not ends_in_backslash:
            self.quote = ""  # an unterminated one-line string: Python's error, not ours
        self.continued = ends_in_backslash and not self.quote


def _odd_backslashes(text: str) -> bool:
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1
