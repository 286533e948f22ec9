"""A handler that raises never ends the session nor leaves a request unanswered: every
route is registered behind one guard (``fxls.server.handler_guard``) that logs the failure
with the method's name and answers the method's empty result."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxls.server import routes
from fxls.server.handler_guard import guarded
from fxls.server.handlers import hover


class _Window:
    """What the guard needs of a server: somewhere to log and show messages."""

    def __init__(self) -> None:
        self.logged: list[str] = []
        self.shown: list[str] = []

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.logged.append(params.message)

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.shown.append(params.message)


class _Registry:
    """Records what ``routes.routed`` registers, as pygls' ``feature``/``command`` would."""

    def __init__(self) -> None:
        self.features: dict[str, Any] = {}
        self.commands: dict[str, Any] = {}

    def feature(self, method: str, options: Any = None) -> Any:
        return lambda handler: self.features.setdefault(method, handler)

    def command(self, name: str) -> Any:
        return lambda handler: self.commands.setdefault(name, handler)


def _raises(ls: Any, params: Any) -> Any:
    raise RuntimeError("the handler broke")


async def _raises_later(ls: Any, params: Any) -> Any:
    await asyncio.sleep(0)
    raise RuntimeError("the handler broke")


def test_a_failed_notification_is_logged_with_its_method_and_answers_none() -> None:
    window = _Window()
    answer = guarded(types.TEXT_DOCUMENT_DID_CLOSE, _raises)(window, object())
    assert answer is None
    assert window.logged == ["fxls: textDocument/didClose failed (see the fxls log)"]
    assert window.shown == []


async def test_a_failed_list_request_answers_a_new_empty_list_each_time() -> None:
    window = _Window()
    handler = guarded(types.TEXT_DOCUMENT_INLAY_HINT, _raises_later, [])
    first, second = await handler(window, object()), await handler(window, object())
    assert first == second == [] and first is not second
    assert window.logged == ["fxls: textDocument/inlayHint failed (see the fxls log)"] * 2


def test_a_user_facing_failure_is_shown_too() -> None:
    window = _Window()
    guarded(types.TEXT_DOCUMENT_DID_SAVE, _raises, user_facing=True)(window, object())
    assert window.shown == window.logged == [
        "fxls: textDocument/didSave failed (see the fxls log)"]


def test_a_guarded_handler_keeps_its_signature_for_pygls() -> None:
    # pygls passes the server to a handler whose first parameter is `ls`

    handler = guarded(types.TEXT_DOCUMENT_HOVER, hover.on_hover)
    assert next(iter(inspect.signature(handler).parameters)) == "ls"
    assert inspect.iscoroutinefunction(handler)


async def test_routed_puts_every_method_behind_the_guard(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = tuple(routes.Route(route.method, _raises_later, route.options, route.empty,
                                route.user_facing) for route in routes.FEATURES)
    monkeypatch.setattr(routes, "FEATURES", broken)
    registry = _Registry()
    routes.routed(registry)  # type: ignore[arg-type]
    assert set(registry.features) == {route.method for route in routes.FEATURES}
    window = _Window()
    answers = {method: await handler(window, object())
               for method, handler in registry.features.items()}
    lists = {types.TEXT_DOCUMENT_INLAY_HINT, types.TEXT_DOCUMENT_CODE_LENS,
             types.TEXT_DOCUMENT_CODE_ACTION}
    assert {method for method, answer in answers.items() if answer == []} == lists
    assert all(answers[method] is None for method in set(answers) - lists)
    assert {line.split()[1] for line in window.logged} == set(answers)
    assert set(registry.commands) == {route.method for route in routes.COMMANDS}


async def test_a_handler_that_raises_leaves_the_session_answering(
    client: LanguageClient, tmp_path: Path
) -> None:
    # a file name with a NUL byte: os.path.realpath raises ValueError in the handler
    odd = "file:///tmp/odd%00name.py"
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=odd, type=types.FileChangeType.Changed)]))
    said = "fxls: workspace/didChangeWatchedFiles failed (see the fxls log)"
    async with asyncio.timeout(30):
        while said not in [m.message for m in client.log_messages]:
            await asyncio.sleep(0.01)
    document = types.TextDocumentIdentifier((tmp_path / "never_opened.py").as_uri())
    assert await client.text_document_hover_async(
        types.HoverParams(document, types.Position(0, 0))) is None
    assert not await client.text_document_code_lens_async(types.CodeLensParams(document))
