"""The LSP client fixtures every feature's server tests share (the helpers are in
tests/lsp_client.py): an editor session with a real ``fxls serve`` rooted at the test's
``tmp_path``; and the order the test files are handed to the two workers in."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.lsp_client import editor_session, serve_config


@pytest_lsp.fixture(config=serve_config())
async def client(lsp_client: LanguageClient, tmp_path: Path):
    async with editor_session(lsp_client, root=tmp_path):
        yield


@pytest_lsp.fixture(config=serve_config())
async def nvim_client(lsp_client: LanguageClient, tmp_path: Path):
    """A client that announces Neovim's capabilities: it negotiates utf-8 positions."""
    async with editor_session(lsp_client, editor="neovim", root=tmp_path):
        yield


#: the slowest test files (``pytest --durations``, a fresh clone's run, 2026-11-27, torch's
#: answers kept), heaviest first: pytest-xdist hands each worker its next file in this order
#: (``--no-loadscope-reorder``), so no long file starts when the other worker has nothing left
HEAVIEST_FIRST = (
    "tests/realmodels/test_real_targets.py",
    "tests/editors/test_vscode.py",
    "tests/export_compile/test_torch_tiers.py",
    "tests/realmodels/test_one_by_one.py",
    "tests/quick_fixes/test_quick_fixes.py",
    "tests/security/test_sandbox_targets.py",
    "tests/export_compile/test_targets_lsp.py",
    "tests/lsp/test_lsp_conventions.py",
    "tests/libraries/test_libraries.py",
    "tests/security/test_job_failures.py",
    "tests/lsp/test_lsp_features.py",
    "tests/constructor_guesses/test_torchvision_in_place.py",
    "tests/worker/test_worker.py",
    "tests/lsp/test_server_faults.py",
    "tests/lsp/test_protocol_robustness.py",
    "tests/realmodels/test_real_models.py",
    "tests/passes/test_pass_results.py",
    "tests/realmodels/test_targets_in_place.py",
    "tests/graph_view/test_graph_page.py",
    "tests/passes/test_pass_cli.py",
    "tests/lsp/test_lsp_e2e.py",
    "tests/passes/test_real_passes.py",
    "tests/files/test_odd_files_cli.py",
    "tests/security/test_hostile_reports_lsp.py",
    "tests/export_compile/test_targets_status_lsp.py",
    "tests/security/test_sandbox.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: number for number, path in enumerate(HEAVIEST_FIRST)}
    root = Path(__file__).resolve().parent.parent
    items.sort(key=lambda item: rank.get(
        Path(item.path).resolve().relative_to(root).as_posix(), len(rank)))
