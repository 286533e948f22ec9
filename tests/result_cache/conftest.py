"""The result cache's fixtures: a cache folder shared by a module's tests (under pytest's
temporary folder, never ``~/.cache/fxls``), and an analysis that records what it was asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fxls import cli
from tests.result_cache.checks import RecordedAnalysis, cache_on


@pytest.fixture(scope="module")
def cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fxls-cache")


@pytest.fixture
def cache(cache_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The cache on for the test, in its module's folder."""
    cache_on(cache_folder, monkeypatch)
    yield cache_folder


@pytest.fixture
def recorded(cache: Path, monkeypatch: pytest.MonkeyPatch) -> RecordedAnalysis:
    """The cache on, and the worker replaced by a recorder of the files it is asked for."""
    analysis = RecordedAnalysis()
    monkeypatch.setattr(cli, "analyze_many", analysis)
    return analysis
