"""SARIF 2.1.0 for code-scanning tools (1-based lines/columns in UTF-16 code units)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fxls import __version__
from fxls.codes import CODES, doc_url
from fxls.output.located import (
    LocatedDiagnostic,
    SourceCache,
    locate,
    pass_origin,
    tracer_of,
)
from fxls.output.setting_problems import sarif_notifications
from fxls.output.statistics import Statistics
from fxls.project.settings import SettingProblem
from fxls.report import FileReport

_LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": code.code,
            "name": code.title.replace(" ", "-"),
            "shortDescription": {"text": code.title},
            "helpUri": doc_url(code.code),
            "defaultConfiguration": {"level": _LEVELS[code.severity.value]},
        }
        for code in CODES.values()
    ]


def _physical_location(item: LocatedDiagnostic, region: dict[str, int]) -> dict[str, Any]:
    location: dict[str, Any] = {
        "artifactLocation": {"uri": Path(item.path).as_posix()}, "region": region}
    if item.cell is not None:  # SARIF has no cells: the region is in the cell its bag names
        location["properties"] = {"cell": item.cell}
    return location


def format_sarif(
    reports: list[FileReport], sources: SourceCache, statistics: Statistics | None = None,
    setting_problems: Sequence[SettingProblem] = (),
) -> str:
    rule_index = {code: i for i, code in enumerate(CODES)}
    results = []
    for report in reports:
        for item in locate(report, sources, once=True):
            d = item.diagnostic
            region = {
                "startLine": item.start.line + 1,
                "startColumn": item.start.character + 1,
                "endLine": item.end.line + 1,
                "endColumn": item.end.character + 1,
            }
            result: dict[str, Any] = {
                "ruleId": d.code,
                "ruleIndex": rule_index.get(d.code, 0),
                "level": _LEVELS.get(d.severity, "warning"),
                "message": {"text": d.message},
                "locations": [{"physicalLocation": _physical_location(item, region)}],
            }
            properties = pass_origin(d)  # the FX pass (and graph) it was found in
            target = tracer_of(d)
            if target is not None:  # the tracer whose problem it is
                properties["target"] = target
            if properties:
                result["properties"] = properties
            results.append(result)
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fxls",
                        "version": __version__,
                        "informationUri": "https://github.com/fxls/fxls",
                        "rules": _rules(),
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": results,
            }
        ],
    }
    if setting_problems:  # bad or refused settings, at their line of pyproject.toml
        document["runs"][0]["invocations"] = [{
            "executionSuccessful": True,
            "toolConfigurationNotifications": sarif_notifications(setting_problems),
        }]
    if statistics is not None:  # a SARIF property bag: readers ignore what they don't know
        document["runs"][0]["properties"] = {"statistics": statistics.to_dict()}
    return json.dumps(document, indent=2) + "\n"
