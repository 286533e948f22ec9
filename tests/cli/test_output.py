"""The CLI's output contract (SPEC: text, JSON version 1 with LSP positions, SARIF 2.1.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxls.output.json_format import format_json
from fxls.output.located import SourceCache
from fxls.output.sarif import format_sarif
from fxls.output.text import format_text
from fxls.project.source_text import UTF8, UTF16, UTF32, SourceText
from fxls.report import Diagnostic, FileReport, ModuleReport, Span

SOURCE = (
    "import torch\n"
    "class Gate(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        s = '门控😀'; y = x.sum() > 0\n"
)


def _report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FileReport, SourceCache]:
    monkeypatch.chdir(tmp_path)  # the report names the file as the user gave it: relative
    path = tmp_path / "gate.py"
    path.write_text(SOURCE, encoding="utf-8")
    line = SOURCE.splitlines()[3]
    start = line.encode().index(b"x.sum()")
    span = Span(str(path), 4, 4, start, start + len(b"x.sum() > 0"))
    diagnostic = Diagnostic(
        "FX001", "error", "a traced value decides control flow", span, module="Gate"
    )
    report = FileReport("gate.py", [ModuleReport("Gate", "partial", 5)], [diagnostic], {})
    sources = SourceCache()
    sources.add(str(path), SOURCE)
    return report, sources


def test_json_contract_uses_lsp_positions_in_utf16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, sources = _report(tmp_path, monkeypatch)
    document = json.loads(format_json([report], sources))
    # '        s = ' (12) + "'门控😀'" (1+1+1+2+1 = 6 UTF-16 units) + '; y = ' (6) = 24
    assert document == {
        "version": 1,
        "files": [
            {
                "path": "gate.py",
                "modules": [
                    {"name": "Gate", "status": "partial", "nodes": 5, "via": None, "entry": None}
                ],
                "diagnostics": [
                    {
                        "code": "FX001",
                        "severity": "error",
                        "message": "a traced value decides control flow",
                        "module": "Gate",
                        "range": {
                            "start": {"line": 3, "character": 24},
                            "end": {"line": 3, "character": 35},
                        },
                        "target": "symbolic_trace",  # additive (SPEC: Targets)
                    }
                ],
            }
        ],
    }


def test_text_is_path_line_col_code_message_one_based_code_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, sources = _report(tmp_path, monkeypatch)
    # code points: 12 + 5 + 6 = 23 -> 1-based column 24
    assert format_text([report], sources) == (
        "gate.py:4:24: FX001 a traced value decides control flow\n"
    )


def test_sarif_has_rules_and_one_based_utf16_regions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report, sources = _report(tmp_path, monkeypatch)
    document = json.loads(format_sarif([report], sources))
    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"FX001", "FX102"}
    (result,) = run["results"]
    assert result["ruleId"] == "FX001" and result["level"] == "error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 4, "startColumn": 25, "endLine": 4, "endColumn": 36}


def test_position_conversions_round_trip() -> None:
    line = "a = '😀é' + x"
    text = SourceText(line)
    byte_col = line.encode().index(b"x")
    assert text.to_position(1, byte_col, UTF8).character == byte_col
    assert text.to_position(1, byte_col, UTF32).character == line.index("x")
    assert text.to_position(1, byte_col, UTF16).character == line.index("x") + 1
    for encoding in (UTF8, UTF16, UTF32):
        units = text.to_position(1, byte_col, encoding).character
        assert text.to_byte_col(0, units, encoding) == byte_col
