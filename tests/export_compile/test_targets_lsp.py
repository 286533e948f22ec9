"""The export and compile targets in the editor (issue 33; pytest-lsp client, real
``fxls serve`` and worker): a graph break and an export failure inside a library (outside
the workspace, on PYTHONPATH) at the user's call, with the chain into the library as related
information; torch's graph-break page as FX301's ``codeDescription``; the symbolic-trace
diagnostics published before compile's; a newer save cancels a running tier; a compile-only
project gets no symbolic-trace code on a loop over a tensor. The library tests read one
analysis of the user's file; the others share one server, each in its own folder."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp_client import (
    editor_session,
    on_the_module_server,
    open_and_wait,
    record_publishes,
    save_and_wait,
    serve_config,
    wait_for_version,
)

CASE = Path(__file__).parent / "library_case"
#: the case is copied here (no file made at import: every xdist worker imports this module)
TMP = Path(tempfile.gettempdir()) / f"fxls-targets-lsp-{os.getpid()}"
PROJECT, LIBRARY = TMP / "project", TMP / "lib" / "breaky_lib.py"
USER_FILE = PROJECT / "model.py"
USER_TEXT = (CASE / "project" / "model.py").read_text(encoding="utf-8")
LIBRARY_TEXT = (CASE / "lib" / "breaky_lib.py").read_text(encoding="utf-8")
TARGETED = {"fxls": {"trace": {"timeout": 120}, "targets": ["export", "compile"]}}


@pytest.fixture(scope="module", autouse=True)
def _library_case() -> Iterator[None]:
    """The library case in ``TMP`` while this module's tests run (before their servers)."""
    shutil.copytree(CASE, TMP, dirs_exist_ok=True)
    yield
    shutil.rmtree(TMP, ignore_errors=True)


@pytest_lsp.fixture(config=serve_config(env={"PYTHONPATH": str(LIBRARY.parent)}, cwd=PROJECT),
                    scope="module")
async def library_client(lsp_client: LanguageClient):
    """The editor open on ``project/``, the library it imports outside it, on PYTHONPATH; the
    editor setting ``fxls.targets`` asks for export and compile."""
    async with editor_session(lsp_client, root=PROJECT, options=TARGETED):
        yield


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def module_client(lsp_client: LanguageClient, module_workspace: Path):
    """The module's server (each test in its ``own_folder``), whose analyses may take
    minutes on a busy machine (a slow tier is cancelled, never timed out)."""
    async with editor_session(lsp_client, root=module_workspace, timeout=300):
        yield


def _where(text: str, fragment: str, row_with: str = "") -> types.Range:
    """The range of ``fragment`` on the first row of ``text`` that has ``row_with`` (default:
    the fragment) in it (0-based; ASCII text)."""
    rows = text.splitlines()
    line = next(number for number, row in enumerate(rows) if (row_with or fragment) in row)
    start = rows[line].index(fragment)
    return types.Range(types.Position(line, start), types.Position(line, start + len(fragment)))


def _in_library(fragment: str, row_with: str = "") -> types.Location:
    return types.Location(LIBRARY.resolve().as_uri(), _where(LIBRARY_TEXT, fragment, row_with))


def _chain(diagnostic: types.Diagnostic) -> list[types.Location]:
    return [info.location for info in diagnostic.related_information or ()]


def _only(diagnostics: list[types.Diagnostic], code: str) -> types.Diagnostic:
    (found,) = [d for d in diagnostics if d.code == code]
    return found


async def _open(client: LanguageClient, path: Path, text: str) -> list[types.Diagnostic]:
    path.write_text(text, encoding="utf-8")
    async with asyncio.timeout(300):
        return await open_and_wait(client, path, text)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def library_diagnostics(library_client: LanguageClient) -> list[types.Diagnostic]:
    """The user's file opened in the library case's editor: its diagnostics."""
    return await _open(library_client, USER_FILE, USER_TEXT)


@on_the_module_server
async def test_a_graph_break_inside_a_library_is_at_the_users_call(
        library_diagnostics: list[types.Diagnostic]) -> None:
    from torch._dynamo.exc import get_gbid_documentation_link

    graph_break = _only(library_diagnostics, "FX301")
    assert graph_break.range == _where(USER_TEXT, "self.block(x)")
    assert graph_break.severity == types.DiagnosticSeverity.Warning
    assert "breaky_lib.noisy" in graph_break.message
    # the chain into the library: the call of `noisy`, dynamo's two break sites
    assert _chain(graph_break) == [_in_library("noisy(x)", "h = noisy(x)"),
                                   _in_library('print("inside")'),
                                   _in_library("h.sum() > 0")]
    # its first break is `print`'s: the code links torch's page for that graph-break type
    page = get_gbid_documentation_link("Failed to trace builtin operator")
    assert graph_break.code_description == types.CodeDescription(page)
    assert page.startswith("https://") and page.endswith("/gb0059.html")


@on_the_module_server
async def test_an_export_failure_inside_a_library_is_at_the_users_call(
        library_diagnostics: list[types.Diagnostic]) -> None:
    failure = _only(library_diagnostics, "FX201")
    assert failure.range == _where(USER_TEXT, "self.block(x)")
    assert failure.severity == types.DiagnosticSeverity.Error
    assert "breaky_lib.Block.forward" in failure.message
    assert _chain(failure) == [_in_library("h.sum() > 0")]


ROW_LOOP = """import torch
from torch import nn


class RowLoop(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        out = []
        for row in x:
            out.append(row * 2)
        return torch.stack(out)
"""


@on_the_module_server
async def test_a_compile_only_project_gets_no_fx002_on_a_loop_over_a_tensor(
        module_client: LanguageClient, own_folder: Path) -> None:
    path = own_folder / "rows.py"
    traced = await _open(module_client, path, ROW_LOOP)  # nothing says compile: symbolic tracing
    assert [d.range.start for d in traced if d.code == "FX002"] == [
        _where(ROW_LOOP, "for row in x").start]
    compiled_text = ROW_LOOP + "\n\ncompiled = torch.compile(RowLoop())\n"
    async with asyncio.timeout(300):
        compiled = await save_and_wait(module_client, path, compiled_text, 2)
    assert compiled == []  # dynamo unrolls the loop: no break either


GATE = """import torch
from torch import nn


class Gate(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h.relu()
        return h
"""
TRACE_AND_COMPILE = '[tool.fxls]\ntargets = ["symbolic_trace", "compile"]\n'


def _codes(publish: types.PublishDiagnosticsParams) -> list[str]:
    return sorted(str(d.code) for d in publish.diagnostics)


def _open_document(client: LanguageClient, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(path.as_uri(), "python", 1, text)))


@on_the_module_server
async def test_tracings_diagnostics_are_published_before_compiles(
        module_client: LanguageClient, own_folder: Path) -> None:
    (own_folder / "pyproject.toml").write_text(TRACE_AND_COMPILE, encoding="utf-8")
    path = own_folder / "gate.py"
    publishes = record_publishes(module_client, path)
    _open_document(module_client, path, GATE)
    async with asyncio.timeout(300):
        while not publishes:
            await asyncio.sleep(0.01)
        first_done = (path.as_uri(), 1) in module_client.fxls_done  # type: ignore[attr-defined]
        final = await wait_for_version(module_client, path.as_uri(), 1)
    assert _codes(publishes[0]) == ["FX001"] and not first_done  # the tier has not run yet
    branch = _where(GATE, "h.sum() > 0")
    assert sorted((str(d.code), d.range == branch) for d in final) == [
        ("FX001", True), ("FX301", True)]
    assert [p.version for p in publishes] == [1] * len(publishes)
    assert _codes(publishes[-1]) == ["FX001", "FX301"]


SLOW_COMPILE = """import time

import torch
from torch import nn


class Slow(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def forward(self, x):
        x = x + 1
        if torch.compiler.is_compiling():
            time.sleep(600)  # dynamo's run of this forward; the eager ones never sleep
        return x * 2
"""
QUICK = SLOW_COMPILE.replace("time.sleep(600)", "pass")


def _sleeping_descendants() -> set[int]:
    """This test's descendants (its server, the worker, the jobs) asleep in ``time.sleep``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:  # gone meanwhile
            continue
        if stat:
            parent = int(stat.rpartition(")")[2].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    sleeping, pending = set(), [os.getpid()]
    while pending:
        for child in children.get(pending.pop(), ()):
            pending.append(child)
            try:
                if "nanosleep" in Path(f"/proc/{child}/wchan").read_text():
                    sleeping.add(child)
            except OSError:
                continue
    return sleeping


def _sleep_is_visible() -> bool:
    """Whether ``/proc/<pid>/wchan`` names the wait of a process in ``time.sleep`` (a kernel
    may hide it): how the test sees dynamo's run of a forward asleep."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if "nanosleep" in Path(f"/proc/{sleeper.pid}/wchan").read_text():
                return True
            time.sleep(0.05)
        return False
    finally:
        sleeper.kill()
        sleeper.wait()


@on_the_module_server
async def test_a_newer_save_cancels_a_running_tier(
        module_client: LanguageClient, own_folder: Path) -> None:
    if not _sleep_is_visible():
        pytest.skip("/proc/<pid>/wchan does not show a sleeping process's wait here")
    (own_folder / "pyproject.toml").write_text(TRACE_AND_COMPILE, encoding="utf-8")
    path = own_folder / "slow.py"
    publishes = record_publishes(module_client, path)
    _open_document(module_client, path, SLOW_COMPILE)
    async with asyncio.timeout(300):
        while not _sleeping_descendants():  # dynamo is running forward: the tier has begun
            await asyncio.sleep(0.1)
    assert publishes and (path.as_uri(), 1) not in module_client.fxls_done  # type: ignore[attr-defined]
    async with asyncio.timeout(300):
        quick = await save_and_wait(module_client, path, QUICK, 2)
        while _sleeping_descendants():  # the job of version 1 was ended, not left to sleep
            await asyncio.sleep(0.1)
    assert quick == []
    assert (path.as_uri(), 1) not in module_client.fxls_done  # type: ignore[attr-defined]
    old = [p for p in publishes if p.version == 1]
    assert old and not [code for p in old for code in _codes(p) if code.startswith("FX3")]
