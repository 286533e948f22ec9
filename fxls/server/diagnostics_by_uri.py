"""Which diagnostics each URI shows: a document's own, plus those other documents found in it.

Analysing ``net.py`` can find a problem in ``layers.py`` (a submodule class defined there,
traced from a class of ``net.py``). That problem is published to ``layers.py``'s URI as a
*contribution* of ``net.py``: it is replaced when ``net.py`` is analysed again and withdrawn
when ``net.py`` is closed, and when ``layers.py``'s text is no longer the one ``net.py``'s
analysis saw (``layers.py`` opened after it changed on disk, or edited in the editor:
``stale_sources``). A URI shows its own analysis' diagnostics merged with every
document's contributions, one per (code, range), its own first.

Plain bookkeeping, no I/O: every change returns the URIs whose shown diagnostics may have
changed, and the server republishes those.

>>> by_uri = DiagnosticsByUri()
>>> fx001 = types.Diagnostic(types.Range(types.Position(11, 11), types.Position(11, 22)),
...                          "branch", code="FX001")
>>> sorted(by_uri.set_contributions("file:///net.py", {"file:///layers.py": [fx001]}))
['file:///layers.py']
>>> [d.code for d in by_uri.shown("file:///layers.py")]
['FX001']
>>> sorted(by_uri.withdraw("file:///net.py"))
['file:///layers.py', 'file:///net.py']
>>> by_uri.shown("file:///layers.py")
[]
"""

from __future__ import annotations

from collections.abc import Iterable

from lsprotocol import types

DiagnosticKey = tuple[str, int, int, int, int]


def diagnostic_key(diagnostic: types.Diagnostic) -> DiagnosticKey:
    """(code, range): the identity under which a problem is shown once per document."""
    start, end = diagnostic.range.start, diagnostic.range.end
    return (str(diagnostic.code), start.line, start.character, end.line, end.character)


def unique(diagnostics: Iterable[types.Diagnostic]) -> list[types.Diagnostic]:
    """The first diagnostic of each (code, range), in order."""
    seen: set[DiagnosticKey] = set()
    kept = []
    for diagnostic in diagnostics:
        key = diagnostic_key(diagnostic)
        if key not in seen:
            seen.add(key)
            kept.append(diagnostic)
    return kept


class DiagnosticsByUri:
    """Per URI: its own diagnostics (with the document version they belong to), and per
    source document the diagnostics that document's analysis located in it."""

    def __init__(self) -> None:
        self._own: dict[str, tuple[list[types.Diagnostic], int | None]] = {}
        #: target uri -> source uri -> diagnostics
        self._foreign: dict[str, dict[str, list[types.Diagnostic]]] = {}
        #: target uri -> source uri -> digest of the target's text those were computed for
        self._seen: dict[str, dict[str, str]] = {}

    def set_own(
        self, uri: str, diagnostics: list[types.Diagnostic], version: int | None
    ) -> set[str]:
        self._own[uri] = (list(diagnostics), version)
        return {uri}

    def set_contributions(
        self,
        source: str,
        by_target: dict[str, list[types.Diagnostic]],
        seen: dict[str, str] | None = None,
    ) -> set[str]:
        """Replace everything ``source`` contributed with ``by_target`` (empty lists are
        dropped); ``seen`` gives, per target, a digest of the target's text they were
        computed for. Returns the targets that had or now have a contribution of
        ``source``."""
        affected = self._drop_contributions(source)
        for target, diagnostics in by_target.items():
            if target == source or not diagnostics:
                continue
            self._foreign.setdefault(target, {})[source] = list(diagnostics)
            if seen is not None and target in seen:
                self._seen.setdefault(target, {})[source] = seen[target]
            affected.add(target)
        return affected

    def stale_sources(self, target: str, digest: str) -> list[str]:
        """The sources whose contributions to ``target`` were computed for another text
        of it than the one whose digest is ``digest``."""
        seen = self._seen.get(target, {})
        return [source for source in self._foreign.get(target, {})
                if seen.get(source) != digest]

    def drop(self, source: str, target: str) -> set[str]:
        """Withdraw what ``source`` contributed to ``target`` alone."""
        by_source = self._foreign.get(target, {})
        if by_source.pop(source, None) is None:
            return set()
        self._seen.get(target, {}).pop(source, None)
        if not by_source:
            del self._foreign[target]
        return {target}

    def withdraw(self, source: str) -> set[str]:
        """``source`` was closed: forget its own diagnostics and its contributions."""
        self._own.pop(source, None)
        return self._drop_contributions(source) | {source}

    def shown(self, uri: str) -> list[types.Diagnostic]:
        """What ``uri`` shows: its own diagnostics, then others' contributions, deduplicated."""
        own, _ = self._own.get(uri, ([], None))
        contributed = self._foreign.get(uri, {})
        return unique([*own, *(d for ds in contributed.values() for d in ds)])

    def own(self, uri: str) -> list[types.Diagnostic]:
        """``uri``'s own diagnostics (those its analysis found in it)."""
        return list(self._own.get(uri, ([], None))[0])

    def version(self, uri: str) -> int | None:
        """The document version of ``uri``'s own diagnostics (None when it has none)."""
        return self._own.get(uri, ([], None))[1]

    def contributors(self, uri: str) -> list[str]:
        """The source documents that currently contribute diagnostics to ``uri``."""
        return list(self._foreign.get(uri, {}))

    def _drop_contributions(self, source: str) -> set[str]:
        affected = set()
        for target in list(self._foreign):
            by_source = self._foreign[target]
            if by_source.pop(source, None) is not None:
                affected.add(target)
                self._seen.get(target, {}).pop(source, None)
            if not by_source:
                del self._foreign[target]
                self._seen.pop(target, None)
        return affected
