"""The worker job: analyse one file and return its report as plain data."""

from __future__ import annotations

from typing import Any

from fxls.analysis.pipeline import analyze_source
from fxls.settings import Settings


def analyze(params: dict[str, Any]) -> dict[str, Any]:
    settings = Settings.from_dict(params.get("settings") or {})
    report = analyze_source(params["path"], params["source"], settings)
    return report.to_dict()

