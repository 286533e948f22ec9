"""The report's data: statuses, severities and node ops are enums/literals with one JSON
form (their plain strings), checked when read back."""

from __future__ import annotations

import json

import pytest

from fxls.codes import Severity
from fxls.project.source_text import source_text
from fxls.report import (
    ClassPlace,
    Diagnostic,
    FileReport,
    ModuleReport,
    NodeInfo,
    Span,
    TraceStatus,
    check_report,
)

PATH = "/p/m.py"
#: the analysed file the report's spans point into
TEXT = source_text("import torch\n\n    x = relu(x)\n")


def _report() -> FileReport:
    span = Span(PATH, 3, 3, 4, 9)
    node = NodeInfo("x", "placeholder", "x", "()", "{}", ["relu"], span)
    module = ModuleReport("Net", TraceStatus.PARTIAL, 1, span, [node], via="Root")
    diagnostic = Diagnostic("FX001", Severity.ERROR, "branch", span, "Net")
    return FileReport(PATH, [module], [diagnostic])


def test_enums_travel_as_their_plain_strings_and_come_back_as_enums() -> None:
    data = json.loads(json.dumps(_report().to_dict()))
    assert data["modules"][0]["status"] == "partial"
    assert data["diagnostics"][0]["severity"] == "error"
    assert "stack" not in data["modules"][0]["nodes"][0]
    back = check_report(data, path=PATH, text=TEXT).report
    assert back.modules[0].status is TraceStatus.PARTIAL
    assert back.diagnostics[0].severity is Severity.ERROR
    assert back.modules[0].verdict() == "partial via Root"


def test_class_places_travel_and_a_report_without_them_still_reads() -> None:
    report = _report()
    report.modules[0].class_places = {"m.Block": ClassPlace(PATH, 3)}
    data = json.loads(json.dumps(report.to_dict()))
    assert data["modules"][0]["class_places"] == {"m.Block": {"file": PATH, "line": 3}}
    back = check_report(data, path=PATH, text=TEXT).report
    assert back.modules[0].class_places == {"m.Block": ClassPlace(PATH, 3)}
    del data["modules"][0]["class_places"]
    assert check_report(data, path=PATH, text=TEXT).report.modules[0].class_places == {}
    data["modules"][0]["class_places"] = {"m.Block": {"file": PATH, "line": "3"}}
    with pytest.raises(ValueError, match=r"class_places\['m.Block'\]\.line"):
        check_report(data, path=PATH, text=TEXT)


@pytest.mark.parametrize(("where", "value"), [("status", "half-traced"), ("op", "call_lambda"),
                                              ("severity", "fatal")])
def test_unknown_values_are_refused_when_read(where: str, value: str) -> None:
    data = _report().to_dict()
    if where == "status":
        data["modules"][0]["status"] = value
    elif where == "op":
        data["modules"][0]["nodes"][0]["op"] = value
    else:
        data["diagnostics"][0]["severity"] = value
    with pytest.raises(ValueError):
        check_report(data, path=PATH, text=TEXT)


def test_statuses_rank_from_not_constructed_to_traced() -> None:
    ranked = sorted(TraceStatus, key=lambda s: s.rank)
    assert ranked == [TraceStatus.SKIPPED, TraceStatus.FAILED, TraceStatus.PARTIAL,
                      TraceStatus.TRACED]
    assert [s for s in TraceStatus if s.has_graph] == [TraceStatus.TRACED, TraceStatus.PARTIAL]
