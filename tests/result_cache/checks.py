"""What the result cache's tests share: ``fxls check`` run in this process with the cache
on in a folder of the test's own (the suite turns it off: tests/conftest.py), and an
analysis that only records which files it was asked for."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fxls import cli
from fxls.report import FileReport


@dataclass(frozen=True)
class Run:
    status: int
    stdout: str
    stderr: str


def check(*arguments: str) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["check", "--no-progress", *arguments])
    return Run(status, out.getvalue(), err.getvalue())


def cache_command(action: str) -> str:
    """What ``fxls cache ACTION`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["cache", action]) == 0
    return out.getvalue()


def cache_on(folder: Path, patch: pytest.MonkeyPatch) -> None:
    """The cache on, in ``folder`` (never the user's ``~/.cache/fxls``)."""
    patch.setenv("FXLS_CACHE_DIR", str(folder))
    patch.delenv("FXLS_NO_CACHE", raising=False)


@dataclass
class RecordedAnalysis:
    """Stands for the worker: each run's analysed paths, and an empty report for each."""

    runs: list[list[str]] = field(default_factory=list)

    async def __call__(self, requests: list[Any], **_: Any) -> list[FileReport]:
        self.runs.append([Path(request.path).name for request in requests])
        return [FileReport(request.path) for request in requests]

    def analysed(self, *arguments: str) -> list[str]:
        """The names of the files ``fxls check`` analysed (the others came from the cache)."""
        check(*arguments)
        return sorted(self.runs[-1])
