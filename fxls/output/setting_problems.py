"""Settings that were bad or refused (``fxls.project.settings.SettingProblem``) in ``fxls check``'s
outputs: a line each on stderr, ``"settings_problems"`` in JSON, configuration
notifications in SARIF."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fxls.project.settings import SettingProblem


def unique_problems(problems: Iterable[SettingProblem]) -> list[SettingProblem]:
    """Each problem once (every file of a project loads the same pyproject.toml), in order."""
    return list(dict.fromkeys(problems))


def shown_path(path: str) -> str:
    """``path`` from the working directory when it is below it, else absolute."""
    if not path:
        return ""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def problem_lines(problems: Iterable[SettingProblem]) -> str:
    """``fxls: pyproject.toml:7: [tool.fxls] `timeout` = nan: ...``, one per line."""
    return "".join(f"fxls: {p.located(shown_path(p.path))}\n" for p in problems)


def problem_entries(problems: Iterable[SettingProblem]) -> list[dict[str, Any]]:
    """JSON: ``{"path", "line", "key", "value", "message", "source"}`` (``path`` as
    :func:`shown_path`; empty with ``line`` 0 for a setting of the user's own)."""
    return [{**p.to_dict(), "path": shown_path(p.path)} for p in problems]


def sarif_notifications(problems: Iterable[SettingProblem]) -> list[dict[str, Any]]:
    """SARIF ``toolConfigurationNotifications``, located at the key's line of pyproject.toml."""
    notifications = []
    for problem in problems:
        notification: dict[str, Any] = {
            "level": "warning",
            "descriptor": {"id": problem.key},
            "message": {"text": str(problem)},
        }
        if problem.path:
            notification["locations"] = [{"physicalLocation": {
                "artifactLocation": {"uri": Path(shown_path(problem.path)).as_posix()},
                "region": {"startLine": max(problem.line, 1)},
            }}]
        notifications.append(notification)
    return notifications
