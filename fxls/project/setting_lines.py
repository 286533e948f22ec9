"""Where each key of ``[tool.fxls]`` is written in a pyproject.toml (tomllib gives values,
not positions): a line scan of the table, enough to put a message about a setting at its line.

>>> lines = key_lines('[project]\\nname = "p"\\n\\n[tool.fxls]\\ntimeout = 5\\n"allow_write" = [\\n'
...                   '  "a",\\n  "../b",\\n]\\n[tool.fxls.env]\\nX = "1"\\n')
>>> lines.table, lines.line_of("timeout"), lines.line_of("allow_write"), lines.line_of("env")
(4, 5, 6, 10)
>>> lines.line_of("allow_write", "../b"), lines.line_of("nowhere")
(8, 4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^\s*\[\s*(?P<name>[^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"""^\s*(?P<quote>["']?)(?P<key>[A-Za-z0-9_-]+)(?P=quote)\s*=""")
_TABLE = "tool.fxls"


def _table_name(text: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in text.split("."))


@dataclass(slots=True)
class KeyLines:
    """1-based lines: the ``[tool.fxls]`` header's (0: none), and each key's."""

    table: int = 0
    keys: dict[str, int] = field(default_factory=dict)
    #: each key's lines, from its own to the end of its value or table
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)

    def line_of(self, key: str, entry: str | None = None) -> int:
        """The line of ``key`` (of its string ``entry`` when that is written on a line of its
        own value); the table's header when the key is not found, else 1."""
        key = key.replace("-", "_")
        line = self.keys.get(key)
        if line is None:
            return self.table or 1
        if entry is not None:
            first, last = self.spans.get(key, (line, line))
            quoted = (f'"{entry}"', f"'{entry}'")
            for number in range(first, last + 1):
                if any(q in self.text[number - 1] for q in quoted):
                    return number
        return line


def key_lines(text: str) -> KeyLines:
    """The lines of ``[tool.fxls]`` and of its keys in the pyproject.toml ``text``."""
    found = KeyLines(text=text.splitlines())
    current = ""  # the table the scan is in
    last_key = ""
    for number, line in enumerate(found.text, start=1):
        header = _HEADER.match(line)
        if header is not None and not line.lstrip().startswith("[["):
            current = _table_name(header.group("name"))
            last_key = ""
            if current == _TABLE:
                found.table = number
            elif current.startswith(_TABLE + "."):
                # a sub-table ([tool.fxls.env]) is where that key is written
                key = current[len(_TABLE) + 1:].split(".")[0].replace("-", "_")
                found.keys.setdefault(key, number)
                found.spans[key] = (number, number)
                last_key = key
            continue
        if line.lstrip().startswith("[["):
            current, last_key = "", ""
            continue
        if current == _TABLE:
            key = _KEY.match(line)
            if key is not None:
                last_key = key.group("key").replace("-", "_")
                found.keys.setdefault(last_key, number)
                found.spans[last_key] = (number, number)
                continue
        if last_key and (current == _TABLE or current.startswith(_TABLE + ".")):
            first, _ = found.spans[last_key]
            found.spans[last_key] = (first, number)
    if found.table == 0 and found.keys:
        found.table = min(found.keys.values())
    return found
