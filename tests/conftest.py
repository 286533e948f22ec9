"""The LSP client fixtures every feature's server tests share (the helpers are in
tests/lsp_client.py): an editor session with a real ``fxls serve`` rooted at the test's
``tmp_path``, or one server for a module's tests that need no fresh one, each test in its own
folder of the module's workspace; and the order the test files are handed to the two workers
in."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_client import close_documents_in, editor_session, own_folder_in, serve_config

#: every test analyses afresh, and none writes to the user's cache: fxls's result cache is
#: off for the whole suite (tests/result_cache turns it on, in a folder of its own)
os.environ["FXLS_NO_CACHE"] = "1"


@pytest_lsp.fixture(config=serve_config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    async with editor_session(lsp_client, root=tmp_path):
        yield


@pytest_lsp.fixture(config=serve_config())
async def nvim_client(lsp_client: LanguageClient, tmp_path: Path):
    """A client that announces Neovim's capabilities: it negotiates utf-8 positions."""
    async with editor_session(lsp_client, editor="neovim", root=tmp_path):
        yield


@pytest.fixture(scope="module")
def module_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace folder of a module's shared servers (``module_client``,
    ``module_nvim_client``): each test works in its ``own_folder`` of it."""
    return tmp_path_factory.mktemp("workspace")


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def module_client(lsp_client: LanguageClient, module_workspace: Path):
    """One server for those tests of a module that need no fresh one (no settings, faults,
    crashes or worker restarts, nothing that counts the session's notifications), marked
    ``on_the_module_server``. A server costs about 3 CPU-seconds, nearly all of it its
    worker's ``import torch``."""
    async with editor_session(lsp_client, root=module_workspace):
        yield


@pytest_lsp.fixture(config=serve_config(), scope="module")
async def module_nvim_client(lsp_client: LanguageClient, module_workspace: Path):
    """``module_client`` as Neovim (utf-8 positions, no dynamic registration)."""
    async with editor_session(lsp_client, editor="neovim", root=module_workspace):
        yield


@pytest_asyncio.fixture(loop_scope="module")
async def own_folder(module_workspace: Path, request: pytest.FixtureRequest
                     ) -> AsyncIterator[Path]:
    """The test's own folder in its module's shared workspace; the documents it opened there
    are closed after it, in the module's servers it used."""
    folder = own_folder_in(module_workspace, request.node.name)
    yield folder
    for name in ("module_client", "module_nvim_client"):
        if name in request.fixturenames:
            close_documents_in(request.getfixturevalue(name), folder)


#: the slowest test files, heaviest first (the whole suite's junit of 2026-11-27, load 5, the
#: files of 10 s or more there, each file this session made cheaper at its share of its
#: before/after time alone): pytest-xdist hands each worker its next file in this order
#: (``--no-loadscope-reorder``), so no long file starts when the other worker has nothing left
HEAVIEST_FIRST = (
    "tests/realmodels/test_real_targets.py",
    "tests/editors/test_vscode.py",
    "tests/security/test_sandbox_targets.py",
    "tests/security/test_job_failures.py",
    "tests/export_compile/test_torch_tiers.py",
    "tests/lsp/test_lsp_features.py",
    "tests/libraries/test_libraries.py",
    "tests/passes/test_real_passes.py",
    "tests/export_compile/test_targets_lsp.py",
    "tests/worker/test_worker.py",
    "tests/passes/test_pass_results.py",
    "tests/graph_view/test_graph_page.py",
    "tests/graph_view/test_graph_legibility.py",
    "tests/files/test_odd_files_lsp.py",
    "tests/lsp/test_server_faults.py",
    "tests/passes/test_export_passes.py",
    "tests/realmodels/test_real_models.py",
    "tests/quick_fixes/test_export_fixes.py",
    "tests/passes/test_pass_cli.py",
    "tests/security/test_sandbox.py",
    "tests/lsp/test_lsp_conventions.py",
    "tests/realmodels/test_one_by_one.py",
    "tests/diagnostics/test_precision.py",
    "tests/settings/test_settings_policy.py",
    "tests/graph_view/test_graph_orientation.py",
    "tests/export_compile/test_export_graph_page.py",
    "tests/constructor_guesses/test_torchvision_in_place.py",
    "tests/files/test_odd_files_cli.py",
    "tests/export_compile/test_targets_status_lsp.py",
    "tests/diagnostics/test_faults.py",
    "tests/export_compile/test_dynamic_settings.py",
    "tests/lsp/test_multi_root.py",
    "tests/passes/test_passes.py",
    "tests/editors/test_nvim.py",
    "tests/quick_fixes/test_export_fixes_lsp.py",
    "tests/export_compile/test_targets_speed_lsp.py",
    "tests/export_compile/test_failures_at_one_call.py",
    "tests/passes/test_pass_lsp.py",
    "tests/passes/test_pass_page.py",
    "tests/passes/test_published_passes.py",
    "tests/security/test_sandbox_check.py",
    "tests/quick_fixes/test_quick_fixes.py",
    "tests/diagnostics/test_codes.py",
    "tests/export_compile/test_hover_during_tiers.py",
    "tests/passes/test_pass_quick_fixes.py",
    "tests/export_compile/test_export_hover.py",
    "tests/projects/test_project_cli.py",
    "tests/files/test_python_files_cli.py",
    "tests/projects/test_projects.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: number for number, path in enumerate(HEAVIEST_FIRST)}
    root = Path(__file__).resolve().parent.parent
    items.sort(key=lambda item: rank.get(
        Path(item.path).resolve().relative_to(root).as_posix(), len(rank)))
