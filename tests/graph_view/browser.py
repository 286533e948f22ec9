"""Headless Chromium for the graph page's tests: the ``browser`` fixture installs what is
missing (editors/vscode's node_modules with playwright-core, Debian's chromium) or skips;
:func:`drive` runs scripts/graph_page_browser.cjs (load, expand, search, click as a person
does), :func:`drive_steps` runs scripts/graph_page_steps.cjs (a test's own list of steps),
:func:`drive_pages` several tests' steps on their pages in one browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.editors.installs import installs_locked

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"
DRIVER = REPO / "scripts" / "graph_page_browser.cjs"
STEPS_DRIVER = REPO / "scripts" / "graph_page_steps.cjs"


def node_modules() -> None:
    """editors/vscode's node_modules (esbuild, dagre, playwright-core): `npm ci` there when
    missing; skips the test without node or npm."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    with installs_locked():
        if not (EXTENSION / "node_modules" / "playwright-core").is_dir():
            if shutil.which("npm") is None:
                pytest.skip("editors/vscode has no node_modules and npm is not installed")
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                  cwd=EXTENSION, capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]


def _chromium() -> Path | None:
    for candidate in (os.environ.get("FXLS_CHROMIUM", ""), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


@pytest.fixture(scope="module")
def browser() -> None:
    """node + playwright-core (editors/vscode's devDependencies, `npm ci` there) + Debian's
    chromium (apt-get, as scripts/vscode-e2e.sh installs it), installed when missing and
    possible; else the browser tests skip."""
    node_modules()
    with installs_locked():
        if _chromium() is None:
            if shutil.which("apt-get") is None:
                pytest.skip("no chromium (apt-get install chromium)")
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for command in (["apt-get", "update", "-qq"],
                            ["apt-get", "install", "-y", "-qq", "chromium"]):
                done = subprocess.run(command, capture_output=True, text=True, timeout=900,
                                      env=env)
                assert done.returncode == 0, done.stderr[-3000:]
            assert _chromium() is not None


def _node(script: Path, *arguments: str, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "NODE_PATH": str(EXTENSION / "node_modules")}
    done = subprocess.run(["node", str(script), *arguments], capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["errors"] == [], result["errors"]
    assert result["requests"] == [], "the page reached for the network"
    assert result["pageError"] is None
    return result


def drive(page: Path, *arguments: str, timeout: float = 400) -> dict[str, Any]:
    """What scripts/graph_page_browser.cjs saw, doing what a person does on the page."""
    return _node(DRIVER, str(page), *arguments, timeout=timeout)


def drive_steps(page: Path, steps: list[dict[str, Any]], *, width: int = 1600,
                height: int = 1000, timeout: float = 400) -> dict[str, Any]:
    """What ``steps`` read on the page (see scripts/graph_page_steps.cjs for the steps)."""
    # not beside the page: pages are shared by the test files running at once (pages.py)
    with tempfile.TemporaryDirectory(prefix="fxls-steps-") as folder:
        steps_file = Path(folder) / "steps.json"
        steps_file.write_text(json.dumps(steps), encoding="utf-8")
        return _node(STEPS_DRIVER, str(page), str(steps_file), "--width", str(width),
                     "--height", str(height), timeout=timeout)


@dataclass(frozen=True)
class PageRun:
    """One test's (or fixture's) steps on one page, at one window size."""

    page: Path
    steps: list[dict[str, Any]]
    width: int = 1600
    height: int = 1000


def drive_pages(runs: dict[str, PageRun], *, timeout: float = 600) -> dict[str, dict[str, Any]]:
    """What each run's steps read, by the run's name: the runs one after the other in one
    browser (a launch costs seconds), each on its page loaded afresh at its size, so that no
    run sees another's state. The page errors and requests of all are asserted empty."""
    steps: list[dict[str, Any]] = []
    for number, (name, run) in enumerate(runs.items()):
        if number:
            steps.append({"open": str(run.page), "width": run.width, "height": run.height})
        steps += [{**step, "as": f"{name}:{step['as']}"} if "as" in step else step
                  for step in run.steps]
    first = next(iter(runs.values()))
    result = drive_steps(first.page, steps, width=first.width, height=first.height,
                         timeout=timeout)
    read: dict[str, dict[str, Any]] = {name: {} for name in runs}
    for key, value in result.items():
        name, separator, own_key = key.partition(":")
        if separator and name in read:
            read[name][own_key] = value
    return read
