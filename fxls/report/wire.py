"""The one decoder of the report format: reports from the worker are untrusted input.

The analysis runs the user's code in its own process: that code can change fxls itself
(``FileReport.to_dict``) or write to the result pipe, so what comes back is checked here
before anything uses it: every field against the type ``fxls.report.model`` declares for it
(required fields, types, enums), the diagnostics' ranges inside the analysed document, and
sizes (at most ``MAX_DIAGNOSTICS`` diagnostics per file, then one that says how many were
dropped; messages and related information cut to a length). A report that does not fit
raises ``InvalidReport`` saying where and why; the caller turns it into the file's FX102.
"""

from __future__ import annotations

import bisect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields, is_dataclass
from enum import Enum
from typing import Any, Literal, get_args, get_origin, get_type_hints

from fxls.codes import Severity
from fxls.project.source_text import SourceText
from fxls.report.model import Diagnostic, FileReport, Span

#: diagnostics shown per file; the rest (the least severe) become one diagnostic saying so
MAX_DIAGNOSTICS = 1000
#: related locations kept per diagnostic
MAX_RELATED = 50
#: characters kept of a diagnostic's message
MAX_MESSAGE = 4000
#: the largest line or column a span may hold (LSP positions are 32-bit)
MAX_POSITION = 2**31 - 1

class InvalidReport(ValueError):
    """A report that does not fit the protocol's types: ``where`` (a path into the data, e.g.
    ``diagnostics[3].span.line``) and ``problem``."""

    def __init__(self, problem: str, where: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.where = where

    def inside(self, step: str) -> InvalidReport:
        """The same problem seen from one level up (``step`` is that level's part)."""
        joined = step + ("" if not self.where or self.where.startswith("[") else ".") + self.where
        return InvalidReport(self.problem, joined)

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}" if self.where else self.problem


@dataclass(slots=True)
class SentAhead:
    """What a partial report left for the final one to refer to (``from_partial``): its
    diagnostics that were kept, by their index in it, and how many it had."""

    kept: dict[int, Diagnostic]
    total: int
    worst_dropped: Severity | None = None


@dataclass(slots=True)
class CheckedReport:
    report: FileReport
    #: what a later report may refer to (see ``SentAhead``)
    sent_ahead: SentAhead


def check_report(
    data: Any, *, path: str, text: SourceText, partial: SentAhead | None = None
) -> CheckedReport:
    """The ``FileReport`` of ``data`` (``FileReport.to_dict``'s shape) for the document
    ``text`` at ``path`` (resolved: spans in it must lie inside ``text``); ``partial`` is
    what the partial report sent ahead of this one left. Raises ``InvalidReport``."""
    if not isinstance(data, dict):
        raise InvalidReport(f"the report is {_kind(data)}, not an object")
    report = _FILE_REPORT(data)
    raw = data.get("diagnostics", [])
    if not isinstance(raw, list):
        raise InvalidReport(f"is {_kind(raw)}, not a list", "diagnostics")
    entries = _entries(raw, data.get("from_partial"), partial)
    kept, dropped, worst = _keep_most_severe(entries)
    if partial is not None and any(e is None for e in entries):
        worst = _worse(worst, partial.worst_dropped)
    for index, diagnostic in kept.items():
        try:
            try:
                _check_span(diagnostic.span, path, text)
            except InvalidReport as error:
                raise error.inside("span") from None
            for number, related in enumerate(diagnostic.related):
                try:
                    _check_span(related.span, path, text)
                except InvalidReport as error:
                    raise error.inside(f"related[{number}].span") from None
        except InvalidReport as error:
            raise error.inside(f"diagnostics[{index}]") from None
    report.diagnostics = [kept[index] for index in sorted(kept)]
    if dropped:
        report.diagnostics.append(_dropped_notice(len(entries), dropped, worst, path, text))
    return CheckedReport(report, SentAhead(kept, len(entries), worst if dropped else None))


def _entries(raw: list[Any], reused: Any, partial: SentAhead | None) -> list[Any]:
    """The report's diagnostics in order: raw data for its own ones, the partial report's
    ``Diagnostic`` for the ones it refers to (None where that one was dropped)."""
    if reused is None or reused == []:
        return list(raw)
    if partial is None:
        raise InvalidReport("the report continues a partial report that is missing or was "
                            "invalid", "from_partial")
    if not isinstance(reused, list):
        raise InvalidReport(f"is {_kind(reused)}, not a list", "from_partial")
    total = len(raw) + len(reused)
    taken: dict[int, int] = {}
    for number, pair in enumerate(reused):
        if not (isinstance(pair, list) and len(pair) == 2
                and all(type(v) is int for v in pair)):
            raise InvalidReport("is not a pair of integers", f"from_partial[{number}]")
        place, index = pair
        if not 0 <= place < total or place in taken or not 0 <= index < partial.total:
            raise InvalidReport(f"[{place}, {index}] is outside the reports",
                                f"from_partial[{number}]")
        taken[place] = index
    new = iter(raw)
    return [partial.kept.get(taken[place]) if place in taken else next(new)
            for place in range(total)]


def _keep_most_severe(
    entries: list[Any]
) -> tuple[dict[int, Diagnostic], int, Severity | None]:
    """The diagnostics kept (by index: the ``MAX_DIAGNOSTICS`` most severe, in order, each
    checked), how many were dropped and the worst severity among them. Linear: a forged
    report may hold hundreds of thousands."""
    ranks = [_RANK_OF.get(entry.get("severity"), 0) if type(entry) is dict else _rank(entry)
             for entry in entries]
    counts = [ranks.count(rank) for rank in range(len(_RANKED) + 1)]
    dropped = counts[_GONE]
    worst: Severity | None = None
    room, cutoff = MAX_DIAGNOSTICS, len(_RANKED)
    for rank, count in enumerate(counts[:_GONE]):
        if count > room:
            cutoff = rank
            dropped += sum(counts[rank:_GONE]) - room
            worst = _RANKED[rank]
            break
        room -= count
    kept = {}
    for index, (entry, rank) in enumerate(zip(entries, ranks, strict=True)):
        if rank > cutoff or (rank == cutoff and room <= 0) or entry is None:
            continue
        if rank == cutoff:
            room -= 1
        if isinstance(entry, Diagnostic):
            kept[index] = entry
            continue
        try:
            kept[index] = _trimmed(_DIAGNOSTIC(entry))
        except InvalidReport as error:
            raise error.inside(f"diagnostics[{index}]") from None
    return kept, dropped, worst


_RANKED = (Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT)
_RANK_OF: dict[Any, int] = {severity.value: rank for rank, severity in enumerate(_RANKED)}
#: the rank of a diagnostic of the partial report that was dropped there already
_GONE = len(_RANKED)


def _rank(entry: Any) -> int:
    """Worse is lower; a malformed entry counts as an error (kept, so that it is checked)."""
    if type(entry) is dict:
        return _RANK_OF.get(entry.get("severity"), 0)
    if entry is None:
        return _GONE
    return _RANK_OF.get(entry.severity, 0) if isinstance(entry, Diagnostic) else 0


def _worse(a: Severity | None, b: Severity | None) -> Severity | None:
    if a is None or b is None:
        return a or b
    return a if _RANK_OF[a] <= _RANK_OF[b] else b


def _trimmed(diagnostic: Diagnostic) -> Diagnostic:
    if len(diagnostic.message) > MAX_MESSAGE:
        diagnostic.message = diagnostic.message[: MAX_MESSAGE - 1] + "…"
    del diagnostic.related[MAX_RELATED:]
    return diagnostic


def _dropped_notice(
    total: int, dropped: int, worst: Severity | None, path: str, text: SourceText
) -> Diagnostic:
    message = (f"the analysis reported {total:,} diagnostics for this file; fxls shows at "
               f"most {MAX_DIAGNOSTICS:,}: the {dropped:,} least severe were dropped")
    return Diagnostic("FX102", worst or Severity.WARNING, message, whole_line(path, text, 1))


def whole_line(path: str, text: SourceText, line: int) -> Span:
    """A span over line ``line``'s text (its indentation left out)."""
    return Span(path, line, line, text.indent_bytes(line), text.byte_length(line))


_FXLS_IMPORT = re.compile(r"^[ \t]*(?:from|import)[ \t]+fxls\b", re.MULTILINE)


def suspect_line(text: SourceText) -> int | None:
    """The first line of the analysed file that imports fxls (what changes fxls' own
    report must import it), if any."""
    match = _FXLS_IMPORT.search(text.text)
    return None if match is None else bisect.bisect_right(text.line_starts, match.start())


# -- ranges -------------------------------------------------------------------------------

def _check_span(span: Span, path: str, text: SourceText) -> None:
    _check_bounds(span)
    if span.file != path:
        return  # another file: placed (and clamped) against that file's text when shown
    if not 1 <= span.line <= span.end_line <= text.line_count:
        raise InvalidReport(f"lines {span.line}-{span.end_line} are outside the document "
                            f"({text.line_count} lines)")
    if not 0 <= span.col <= text.byte_length(span.line) or \
            not 0 <= span.end_col <= text.byte_length(span.end_line):
        raise InvalidReport(f"columns {span.col}-{span.end_col} are outside lines "
                            f"{span.line}-{span.end_line}")
    if span.line == span.end_line and span.end_col < span.col:
        raise InvalidReport(f"it ends (column {span.end_col}) before it starts "
                            f"(column {span.col})")


def _check_bounds(span: Span) -> None:
    for name in ("line", "end_line", "col", "end_col"):
        value = getattr(span, name)
        if not 0 <= value <= MAX_POSITION:
            raise InvalidReport(f"{value} is not a position", name)


# -- the types ----------------------------------------------------------------------------

_Parse = Callable[[Any], Any]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    name = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value))
    return name or type(value).__name__


def _parser(hint: Any) -> _Parse:
    """A function that checks plain data against the type ``hint`` and returns its value
    (dataclasses and enums built); raises InvalidReport."""
    origin = get_origin(hint)
    if hint is Any:
        return lambda value: value
    if hint in (str, bool):
        return _exact(hint)
    if hint is int:
        return _integer
    if hint is float:
        return _number
    if hint is type(None):
        return _exact(type(None))
    if origin in (typing.Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        scalars = _exact_types(hint)
        if len(options) > 1 and scalars is not None:  # ``int | str``: one of those types
            return _exact_of(scalars)
        if len(options) != 1 or len(get_args(hint)) != 2:
            raise TypeError(f"no parser for {hint!r}")
        inner = _parser(options[0])
        return lambda value: None if value is None else inner(value)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        return _list_of(_parser(item), _exact_types(item))
    if origin is dict:
        _, item = get_args(hint) or (str, Any)
        return _dict_of(_parser(item))
    if origin is Literal:
        return _one_of(get_args(hint))
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _enum(hint)
    if hint is Span:
        return _span
    if isinstance(hint, type) and is_dataclass(hint):
        return _dataclass(hint)
    raise TypeError(f"no parser for {hint!r}")


def _span(value: Any) -> Span:
    """A span, its positions bounded (the hot case, thousands per report, without a call
    per field; anything unusual goes through the general parser, which says what is wrong)."""
    if type(value) is dict and len(value) == 5:
        file, line, end_line = value.get("file"), value.get("line"), value.get("end_line")
        col, end_col = value.get("col"), value.get("end_col")
        if (type(file) is str and type(line) is int and type(end_line) is int
                and type(col) is int and type(end_col) is int
                and 0 <= line <= MAX_POSITION and 0 <= end_line <= MAX_POSITION
                and 0 <= col <= MAX_POSITION and 0 <= end_col <= MAX_POSITION):
            return Span(file, line, end_line, col, end_col)
    span: Span = _SPAN(value)
    _check_bounds(span)
    return span


def _exact(kind: type) -> _Parse:
    def parse(value: Any) -> Any:
        if type(value) is not kind:
            raise InvalidReport(f"is {_kind(value)}, expected {_kind(kind())}")
        return value
    return parse


def _exact_of(kinds: tuple[type, ...]) -> _Parse:
    def parse(value: Any) -> Any:
        if type(value) not in kinds:
            raise InvalidReport(f"is {_kind(value)}, expected one of "
                                f"{', '.join(_kind(kind()) for kind in kinds)}")
        return value
    return parse


def _integer(value: Any) -> int:
    if type(value) is not int:
        raise InvalidReport(f"is {_kind(value)}, expected an integer")
    return value


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise InvalidReport(f"is {_kind(value)}, expected a number")
    return value  # type: ignore[no-any-return]


def _list_of(item: _Parse, exact: tuple[type, ...] | None = None) -> _Parse:
    def parse(value: Any) -> list[Any]:
        if type(value) is not list:
            raise InvalidReport(f"is {_kind(value)}, expected a list")
        if exact is not None and all(type(element) in exact for element in value):
            return list(value)
        result = []
        for index, element in enumerate(value):
            try:
                result.append(item(element))
            except InvalidReport as error:
                raise error.inside(f"[{index}]") from None
        return result
    return parse


def _dict_of(item: _Parse) -> _Parse:
    def parse(value: Any) -> dict[str, Any]:
        if type(value) is not dict:
            raise InvalidReport(f"is {_kind(value)}, expected an object")
        result = {}
        for key, element in value.items():
            try:
                result[key] = item(element)
            except InvalidReport as error:
                raise error.inside(f"[{key[:40]!r}]") from None
        return result
    return parse


def _one_of(allowed: tuple[Any, ...]) -> _Parse:
    def parse(value: Any) -> Any:
        if type(value) is not str or value not in allowed:
            raise InvalidReport(f"is {_short(value)}, expected one of {', '.join(allowed)}")
        return value
    return parse


def _enum(kind: type[Enum]) -> _Parse:
    def parse(value: Any) -> Any:
        try:
            return kind(value) if isinstance(value, str) else kind(object())
        except ValueError:
            allowed = ", ".join(str(member.value) for member in kind)
            raise InvalidReport(f"is {_short(value)}, expected one of {allowed}") from None
    return parse


_SCALARS = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _exact_types(hint: Any) -> tuple[type, ...] | None:
    """The exact types a scalar (or optional scalar) field's value may have; None for the
    others (they need their parser). Lets the hot loop check most fields without a call."""
    if hint in _SCALARS:
        return _SCALARS[hint]
    if get_origin(hint) in (typing.Union, types.UnionType) and all(
            a in _SCALARS or a is type(None) for a in get_args(hint)):
        return tuple(kind for a in get_args(hint)
                     for kind in (_SCALARS.get(a) or (type(None),)))
    return None


def _dataclass(kind: type, skip: frozenset[str] = frozenset()) -> _Parse:
    hints = get_type_hints(kind)
    plan = []
    for spec in fields(kind):
        if spec.name in skip:
            continue
        required = spec.default is MISSING and spec.default_factory is MISSING
        hint = hints[spec.name]
        plan.append((spec.name, _exact_types(hint), _parser(hint), required))

    def parse(value: Any) -> Any:
        if type(value) is not dict:
            raise InvalidReport(f"is {_kind(value)}, expected an object")
        arguments = {}
        for name, exact, field_parser, required in plan:
            if name in value:
                item = value[name]
                if exact is not None and type(item) in exact:
                    arguments[name] = item
                    continue
                try:
                    arguments[name] = field_parser(item)
                except InvalidReport as error:
                    raise error.inside(name) from None
            elif required:
                raise InvalidReport("is missing", name)
        return kind(**arguments)
    return parse


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_SPAN = _dataclass(Span)
_DIAGNOSTIC = _dataclass(Diagnostic)
_FILE_REPORT = _dataclass(FileReport, skip=frozenset({"diagnostics"}))
