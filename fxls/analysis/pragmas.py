"""``# fxls: ...`` comments: per-class init/args/concrete/leaf/skip, per-line ignore[...], and
file-wide ``opaque <dotted.name>`` (a library function or module class kept opaque)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

from fxls.project.source_text import source_text

_PRAGMA = re.compile(r"#\s*fxls:\s*(\w+)\s*(.*?)\s*$")
_IGNORE = re.compile(r"#\s*fxls:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


@dataclass
class ClassPragmas:
    init: str | None = None  # "d_in=8, d_out=4"
    args: str | None = None  # "(torch.randn(2, 8),)"
    concrete: str | None = None  # "{'flag': False}"
    targets: str | None = None  # "export, compile": the tracers this class must pass
    dynamic: str | None = None  # '{"x": {0: "batch"}}': export's dynamic shapes
    leaf: bool = False
    skip: bool = False
    lines: dict[str, int] = field(default_factory=dict)  # pragma kind -> line (1-based)


@dataclass
class FilePragmas:
    classes: dict[str, ClassPragmas] = field(default_factory=dict)
    #: line -> codes ignored there (empty set: every code)
    ignored: dict[int, set[str]] = field(default_factory=dict)
    #: ``# fxls: opaque timm.layers.padding.pad_same``: dotted names of library functions
    #: (traced as one call) and nn.Module classes (leaf modules), anywhere in the file
    opaque: list[str] = field(default_factory=list)

    def is_ignored(self, line: int, code: str) -> bool:
        codes = self.ignored.get(line)
        return codes is not None and (not codes or code in codes)


def _comments(source: str) -> list[tuple[int, str]]:
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        for number, line in enumerate(source_text(source).lines(), 1):
            if "#" in line and "fxls:" in line:
                found.append((number, line[line.index("#"):]))
    return found


def parse_pragmas(source: str, tree: ast.AST | None = None) -> FilePragmas:
    """The pragmas of ``source``; ``tree`` is its parse when the caller already has it."""
    result = FilePragmas()
    if "fxls:" not in source:  # no pragma can be there: skip tokenizing (most files)
        return result
    comments = _comments(source)
    for line, text in comments:
        match = _PRAGMA.search(text)
        if match and match.group(1) == "opaque":
            result.opaque += [n.strip() for n in match.group(2).split(",") if n.strip()]
        match = _IGNORE.search(text)
        if match:
            codes = match.group(1)
            result.ignored[line] = (
                {c.strip().upper() for c in codes.split(",") if c.strip()} if codes else set()
            )
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return result
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for cls in classes:
        first = min([cls.lineno, *(d.lineno for d in cls.decorator_list)])
        last = cls.end_lineno or cls.lineno
        pragmas = ClassPragmas()
        for line, text in comments:
            # the line right above the class (or its decorators), or anywhere in its body
            if not (line == first - 1 or first <= line <= last):
                continue
            if first <= line <= last and _inner_class_owns(classes, cls, line):
                continue
            match = _PRAGMA.search(text)
            if not match:
                continue
            kind, value = match.group(1), match.group(2)
            if kind in ("init", "args", "concrete", "targets", "dynamic"):
                setattr(pragmas, kind, value)
                pragmas.lines[kind] = line
            elif kind in ("leaf", "skip"):
                setattr(pragmas, kind, True)
                pragmas.lines[kind] = line
        result.classes[cls.name] = pragmas
    return result


def _inner_class_owns(classes: list[ast.ClassDef], outer: ast.ClassDef, line: int) -> bool:
    for other in classes:
        if other is outer:
            continue
        nested = outer.lineno < other.lineno and (other.end_lineno or other.lineno) <= (
            outer.end_lineno or outer.lineno
        )
        if nested and other.lineno - 1 <= line <= (other.end_lineno or other.lineno):
            return True
    return False
