"""Cross-file diagnostics without a worker: which URI shows what, echoes at the reaching
call, and which open documents depend on a saved file."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from fxls.report import Diagnostic, FileReport, ModuleReport, NodeInfo, RelatedInfo, Span
from fxls.server.dependencies import depends_on, imported_names, is_project_file
from fxls.server.diagnostics_by_uri import DiagnosticsByUri
from fxls.server.lsp_convert import RangeConverter, place_diagnostics

NET, LAYERS, OTHER = "file:///p/net.py", "file:///p/layers.py", "file:///p/other.py"


def _diagnostic(code: str, line: int, col: int = 0, end_col: int = 5) -> types.Diagnostic:
    return types.Diagnostic(
        types.Range(types.Position(line, col), types.Position(line, end_col)), "m", code=code
    )


def test_a_uri_shows_its_own_diagnostics_then_each_sources_contributions_once() -> None:
    board = DiagnosticsByUri()
    board.set_own(LAYERS, [_diagnostic("FX001", 11)], version=3)
    board.set_contributions(NET, {LAYERS: [_diagnostic("FX001", 11), _diagnostic("FX013", 4)]})
    board.set_contributions(OTHER, {LAYERS: [_diagnostic("FX013", 4), _diagnostic("FX002", 7)]})
    shown = board.shown(LAYERS)
    assert [(d.code, d.range.start.line) for d in shown] == [
        ("FX001", 11), ("FX013", 4), ("FX002", 7)
    ]
    assert board.version(LAYERS) == 3 and board.version(NET) is None
    assert board.contributors(LAYERS) == [NET, OTHER]


def test_reanalysis_replaces_a_sources_contributions_and_reports_what_changed() -> None:
    board = DiagnosticsByUri()
    board.set_contributions(NET, {LAYERS: [_diagnostic("FX001", 11)]})
    affected = board.set_contributions(NET, {OTHER: [_diagnostic("FX002", 2)]})
    assert affected == {LAYERS, OTHER}  # LAYERS must be republished: now empty
    assert board.shown(LAYERS) == [] and [d.code for d in board.shown(OTHER)] == ["FX002"]
    assert board.set_contributions(NET, {}) == {OTHER}
    assert board.shown(OTHER) == []


def test_closing_a_source_withdraws_its_contributions_but_keeps_others() -> None:
    board = DiagnosticsByUri()
    board.set_own(NET, [_diagnostic("FX001", 13)], version=1)
    board.set_contributions(NET, {LAYERS: [_diagnostic("FX001", 11)]})
    board.set_contributions(
        OTHER, {LAYERS: [_diagnostic("FX002", 7)], NET: [_diagnostic("FX3", 1)]}
    )
    assert board.withdraw(NET) == {NET, LAYERS}
    assert [d.code for d in board.shown(LAYERS)] == ["FX002"]
    # what OTHER found in the closed NET stays shown (published for a file not open)
    assert [d.code for d in board.shown(NET)] == ["FX3"] and board.version(NET) is None
    assert board.withdraw(OTHER) == {OTHER, LAYERS, NET}
    assert board.shown(LAYERS) == [] and board.shown(NET) == []


def test_a_source_never_contributes_to_itself() -> None:
    board = DiagnosticsByUri()
    assert board.set_contributions(NET, {NET: [_diagnostic("FX001", 1)]}) == set()
    assert board.shown(NET) == []


LAYERS_TEXT = "class Block:\n    def forward(self, x):\n        if x.sum() > 0:\n"
NET_TEXT = (
    "class Net:\n    def forward(self, x):\n        h = self.helper(x)\n"
    "        return self.block(h)\n"
)


def _cross_file_report(tmp_path: Path, severity: str = "error") -> FileReport:
    net, layers = str(tmp_path / "net.py"), str(tmp_path / "layers.py")
    problem = Diagnostic(
        "FX001", severity, "branch", Span(layers, 3, 3, 11, 22), "Net",
        [RelatedInfo(Span(net, 3, 3, 12, 26), "reached from here"),
         RelatedInfo(Span(net, 4, 4, 15, 28), "reached from here")],
    )
    second = Diagnostic(
        "FX001", severity, "another branch", Span(layers, 3, 3, 11, 18), "Net",
        [RelatedInfo(Span(net, 4, 4, 15, 28), "reached from here")],
    )
    library = Diagnostic(
        "FX004", "error", "boom", Span("/usr/lib/python3/site-packages/lib.py", 1, 1, 0, 4),
        "Net", [RelatedInfo(Span(net, 4, 4, 15, 28), "reached from here")],
    )
    nowhere = Diagnostic("FX002", "error", "loop", Span(layers, 1, 1, 0, 5), "Net")
    return FileReport(net, [], [problem, second, library, nowhere])


def test_a_problem_in_another_file_is_placed_there_and_echoed_at_the_reaching_call(
    tmp_path: Path,
) -> None:
    (tmp_path / "layers.py").write_text(LAYERS_TEXT, encoding="utf-8")
    converter = RangeConverter(str(tmp_path / "net.py"), NET_TEXT, "utf-16")
    placed = place_diagnostics(
        _cross_file_report(tmp_path), converter, lambda f: is_project_file(f, [str(tmp_path)])
    )
    layers = str((tmp_path / "layers.py").resolve())
    assert set(placed) == {converter.path, layers}  # nothing for the library file
    assert [(d.code, d.range.start.line, d.range.start.character) for d in placed[layers]] == [
        ("FX001", 2, 11), ("FX001", 2, 11), ("FX002", 0, 0)
    ]
    echoes = placed[converter.path]
    # one echo per (code, call): the two FX001 share the innermost call in net.py
    assert [(d.code, d.range.start.line, d.range.start.character) for d in echoes] == [
        ("FX001", 3, 15), ("FX004", 3, 15)
    ]
    fx001 = echoes[0]
    assert fx001.message.startswith("in layers.py:3: branch")
    assert "and 1 more problem" in fx001.message
    sites = [(r.location.uri, r.location.range.start.line) for r in fx001.related_information]
    assert sites[:2] == [((tmp_path / "layers.py").resolve().as_uri(), 2)] * 2
    assert (converter.location(Span(str(tmp_path / "net.py"), 3, 3, 12, 26)).uri, 2) in sites


def test_information_found_in_another_file_is_not_echoed(tmp_path: Path) -> None:
    (tmp_path / "layers.py").write_text(LAYERS_TEXT, encoding="utf-8")
    converter = RangeConverter(str(tmp_path / "net.py"), NET_TEXT, "utf-16")
    report = _cross_file_report(tmp_path, severity="information")
    report.diagnostics = report.diagnostics[:2]
    placed = place_diagnostics(report, converter, lambda f: True)
    assert placed[converter.path] == []


def test_other_open_documents_convert_with_their_analysed_text(tmp_path: Path) -> None:
    layers = str((tmp_path / "layers.py").resolve())
    (tmp_path / "layers.py").write_text("", encoding="utf-8")  # disk is stale
    converter = RangeConverter(
        str(tmp_path / "net.py"), NET_TEXT, "utf-16", {layers: "é = 1\n" + LAYERS_TEXT}
    )
    span = Span(layers, 1, 1, 2, 3)
    assert converter.range(span).start.character == 1  # "é" is 2 bytes, 1 UTF-16 unit


def test_project_files_exclude_installed_libraries(tmp_path: Path) -> None:
    roots = [str(tmp_path)]
    assert is_project_file(str(tmp_path / "pkg" / "layers.py"), roots)
    assert not is_project_file(str(tmp_path / ".venv/lib/site-packages/torch/nn.py"), roots)
    assert not is_project_file("/elsewhere/layers.py", roots)
    assert not is_project_file(str(tmp_path / "layers.py"), [""])


def test_import_statements_name_the_modules_a_document_uses() -> None:
    text = (
        "import torch, torch.nn as nn\n"
        "from .blocks.layers import Block as B\n"
        "from . import heads\n"
        "from pkg import (\n    encoders,\n)\n"
        "x = 'import fake'  # not at a statement start\n"
    )
    names = imported_names(text)
    assert {"torch", "torch.nn", "blocks.layers", "blocks.layers.Block", "heads", "pkg"} <= names
    assert not any("fake" in name for name in names)


def test_a_document_depends_on_files_it_imports_or_its_report_touched(tmp_path: Path) -> None:
    layers = str(tmp_path / "layers.py")
    assert depends_on(None, "from layers import Block\n", layers)
    assert depends_on(None, "import models.layers\n", layers)
    assert depends_on(None, "from pkg import layers\n", str(tmp_path / "pkg" / "layers.py"))
    assert depends_on(None, "from pkg.sub import X\n", str(tmp_path / "pkg" / "__init__.py"))
    assert not depends_on(None, "import torch\n", layers)
    node = NodeInfo("fc", "call_module", "fc", "(x,)", "{}", [], Span(layers, 2, 2, 0, 4))
    report = FileReport(str(tmp_path / "net.py"), [ModuleReport("Net", "traced", 1, None, [node])])
    assert depends_on(report, "import torch\n", layers)
