"""A file's fingerprint: one digest of everything its result depends on.

That is the file's text and real path (a report's spans hold it), the texts of the
workspace files it depends on (``dependencies``), its effective settings (targets, the
sandbox's policy and the diagnostics filter among them), fxls's own code
(``code_version``), and the interpreter and libraries that run it (``environment``). Two
runs with the same fingerprint produce the same report, so either may stand for the other.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass

from fxls.project.settings import Settings
from fxls.result_cache.code_version import code_digest
from fxls.result_cache.dependencies import WorkspaceFiles, dependencies
from fxls.result_cache.environment import environment_digest

#: the version of the fingerprint's recipe and of the entries' format: a change of either
#: makes every older entry foreign
CACHE_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The key of one file's result, and the document it is of: an entry read back is
    checked against ``source`` as a worker's report is, and is given ``path``."""

    key: str
    #: the file as the caller named it (the report's ``path``)
    path: str
    source: str


def fingerprint(path: str, source: str, settings: Settings, *, python: str = sys.executable,
                files: WorkspaceFiles | None = None) -> Fingerprint | None:
    """The fingerprint of the file ``path`` whose text (possibly unsaved) is ``source``,
    analysed with ``settings`` by the interpreter ``python``. ``files`` is a snapshot of the
    workspace shared by the fingerprints of one run (default: a new one). None when the
    result cannot be cached: ``python`` cannot be asked what it has installed, or the file
    depends on too many files to tell."""
    snapshot = files or WorkspaceFiles()
    environment = environment_digest(python)
    depended_on = dependencies(path, source, settings, snapshot)
    if environment is None or depended_on is None:
        return None
    digest = hashlib.sha256()
    for part in (f"fxls-result-{CACHE_FORMAT}", code_digest(), environment,
                 os.path.realpath(path), _settings_text(settings),
                 hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for dependency in depended_on:
        digest.update(f"{dependency}\0{snapshot.digest(dependency)}\0"
                      .encode("utf-8", "surrogateescape"))
    return Fingerprint(digest.hexdigest(), path, source)


def _settings_text(settings: Settings) -> str:
    """The settings the job gets, as canonical JSON (what was said about them is left out:
    the caller prints it)."""
    return json.dumps(settings.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
