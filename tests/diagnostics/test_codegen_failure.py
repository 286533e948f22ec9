"""A class whose traced graph cannot become Python code is never a silent "failed": FX004
names the attribute that breaks the code (as torch.fx's symbolic_trace, which raises a
SyntaxError for it: tests/fxcore/test_codegen_names.py) at the line that registered it."""

from __future__ import annotations

import pytest

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import FileReport

SOURCE = '''import torch
from torch import nn


class Quote(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module('a"b', nn.Linear(4, 4))

    def forward(self, x):
        return getattr(self, 'a"b')(x)


class Keyword(nn.Module):
    def __init__(self):
        super().__init__()
        setattr(self, "class", nn.Linear(4, 4))

    def forward(self, x):
        return getattr(self, "class")(x)


class LineBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer(
            "a\\nb", torch.ones(4))

    def forward(self, x):
        return x + getattr(self, "a\\nb")


class InADict(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleDict({
            "ok": nn.Linear(4, 4),
            'x"y': nn.Linear(4, 4),
        })

    def forward(self, x):
        return self.layers['x"y'](self.layers["ok"](x))


class Backslash(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("a\\\\b", nn.Linear(4, 4))
        self.add_module("a\\\\q", nn.Linear(4, 4))

    def forward(self, x):
        return getattr(self, "a\\\\q")(getattr(self, "a\\\\b")(x))


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        for name in ("a b", "1x", "a'b", "ünï"):
            self.add_module(name, nn.Linear(4, 4))

    def forward(self, x):
        for name in ("a b", "1x", "a'b", "ünï"):
            x = getattr(self, name)(x)
        return x
'''


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> FileReport:
    folder = tmp_path_factory.mktemp("codegen")
    path = folder / f"odd_names_{folder.name}.py"
    path.write_text(SOURCE, encoding="utf-8")
    return analyze_source(str(path), SOURCE, Settings(project=ProjectLayout(root=str(folder))))


def _line(text: str) -> int:
    """The 1-based line of ``SOURCE`` holding ``text``."""
    (number,) = [n for n, line in enumerate(SOURCE.splitlines(), 1) if text in line]
    return number


@pytest.mark.parametrize(("name", "registered", "words"), [
    ("Quote", "self.add_module('a\"b'",
     ["submodule name 'a\"b' contains a double quote", '`getattr(self, "a"b")`',
      "SyntaxError: unterminated string literal"]),
    ("Keyword", 'setattr(self, "class"',
     ["submodule name 'class' is a Python keyword", "`self.class`", "SyntaxError"]),
    ("LineBreak", "self.register_buffer(",
     ["buffer name 'a\\nb' contains a line break", "SyntaxError"]),
    ("InADict", "'x\"y': nn.Linear",
     ["submodule name 'x\"y' contains a double quote", "SyntaxError"]),
])
def test_a_name_that_breaks_the_code_is_reported_where_it_was_registered(
        report: FileReport, name: str, registered: str, words: list[str]) -> None:
    (module,) = [m for m in report.modules if m.name == name]
    assert module.status.value == "failed"
    assert module.reason and "name" in module.reason, module.reason
    (found,) = [d for d in report.diagnostics if d.module == name]
    assert found.code == "FX004" and found.severity.value == "error"
    assert found.span.line == _line(registered), found
    for text in [*words, "Python identifier"]:
        assert text in found.message, (text, found.message)


def test_names_torch_fx_can_write_trace(report: FileReport) -> None:
    (module,) = [m for m in report.modules if m.name == "Fine"]
    assert module.status.value == "traced", module.reason
    assert not [d for d in report.diagnostics if d.module == "Fine"]


def test_every_failed_class_has_a_diagnostic(report: FileReport) -> None:
    failed = {m.name for m in report.modules if m.status.value == "failed"}
    assert failed == {"Quote", "Keyword", "LineBreak", "InADict"}
    assert failed <= {d.module for d in report.diagnostics}



def test_a_name_whose_code_reads_another_attribute_is_reported(report: FileReport) -> None:
    """``'a\\b'`` compiles to ``getattr(self, "a\\b")``: a backspace; ``'a\\q'`` is read
    as written. The class traces (as with torch.fx) but its code would fail when called."""
    (module,) = [m for m in report.modules if m.name == "Backslash"]
    assert module.status.value == "traced"
    (found,) = [d for d in report.diagnostics if d.module == "Backslash"]
    assert found.code == "FX004" and found.span.line == _line('self.add_module("a\\\\b"')
    assert "submodule name 'a\\\\b' contains a backslash" in found.message, found.message
    assert "reads the attribute 'a\\x08' instead" in found.message
