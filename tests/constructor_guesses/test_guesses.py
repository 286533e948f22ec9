"""A class built with arguments fxls inferred is traced with fxls's guesses in it: a trace that
fails on a guess (a guessed int called, measured or iterated; a stand-in without the method the
forward calls, or returning one tensor where the forward takes a dict) is never the user's
error. The use asks for another kind of value, and FX101 names the guess and the failed use
when none works. Inherited constructors and forwards count, and annotations say the kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxls.analysis.pipeline import analyze_source
from fxls.project.settings import load_settings
from fxls.report import FileReport, ModuleReport

MODELS = '''\
import torch
from torch import nn


class SimpleSegmentation(nn.Module):
    def __init__(self, backbone: nn.Module, classifier: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier

    def forward(self, x):
        features = self.backbone(x)
        return self.classifier(features["out"])


class InheritsAnnotated(SimpleSegmentation):
    pass


class PlainBase(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return self.body(x) + 1


class InheritsPlain(PlainBase):
    pass


class CalledThroughAName(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act

    def forward(self, x):
        act = self.act
        return act(x)


class MeasuredThroughAName(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        layers = self.layers
        return x * len(layers)


class IteratedThroughAName(nn.Module):
    def __init__(self, stages):
        super().__init__()
        self.stages = stages

    def forward(self, x):
        stages = self.stages
        for stage in stages:
            x = stage(x)
        return x


class Postprocessed(nn.Module):
    def __init__(self, transform, head):
        super().__init__()
        self.transform = transform
        self.head = head

    def forward(self, images, targets):
        images, targets = self.transform(images, targets)
        return self.transform.postprocess(self.head(images), targets)


class FeatureMaps(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone

    def forward(self, x):
        maps = self.backbone(x)
        return torch.cat([m.flatten(1) for m in maps.values()], 1)


class NothingFits(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = heads

    def forward(self, x):
        return self.heads(x) * len(self.heads)


class RealError(nn.Module):
    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, x):
        y = self.block(x)
        if y.sum() > 0:
            return y
        return -y
'''

INFERRED = "arguments inferred from their use"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> FileReport:
    folder = tmp_path_factory.mktemp("guesses")
    # a module name of its own: an in-process analysis imports the file as that module
    path = folder / f"guesses_{folder.name}.py"
    path.write_text(MODELS, encoding="utf-8")
    return analyze_source(str(path), MODELS, load_settings(folder))


def _module(report: FileReport, name: str) -> ModuleReport:
    (found,) = [m for m in report.modules if m.name == name]
    return found


def _traced_with(report: FileReport, name: str) -> str | None:
    """The entry of a class traced without an exception of its own."""
    module = _module(report, name)
    assert module.status.value in ("traced", "partial"), (name, module.reason)
    assert not [d for d in report.diagnostics if d.module == name and d.code == "FX004"]
    return module.entry


def _line_of(text: str) -> int:
    return MODELS.splitlines().index(text) + 1


def test_a_subclass_inherits_its_annotated_constructor_and_forward(report):
    # FCN: `backbone: nn.Module` in the base's __init__, `self.backbone(x)` in its forward
    assert _traced_with(report, "InheritsAnnotated") == (
        f"InheritsAnnotated(backbone=nn.Identity(), classifier=nn.Identity()), {INFERRED}")


def test_an_inherited_forward_says_the_argument_is_called(report):
    assert _traced_with(report, "InheritsPlain") == f"InheritsPlain(body=nn.Identity()), {INFERRED}"


def test_a_guessed_int_that_is_called_becomes_a_module(report):
    assert _traced_with(report, "CalledThroughAName") == (
        f"CalledThroughAName(act=nn.Identity()), {INFERRED}")


def test_a_guessed_int_given_to_len_becomes_a_sequence(report):
    assert _traced_with(report, "MeasuredThroughAName") == (
        f"MeasuredThroughAName(layers=(32, 32)), {INFERRED}")


def test_a_guessed_int_that_is_iterated_becomes_a_list_of_modules(report):
    # its items are called: a list of identities, not of sizes
    assert _traced_with(report, "IteratedThroughAName") == (
        f"IteratedThroughAName(stages=nn.ModuleList([nn.Identity()] * 2)), {INFERRED}")


def test_a_stand_in_has_the_methods_called_on_it_and_returns_what_is_unpacked(report):
    assert _traced_with(report, "Postprocessed") == (
        "Postprocessed(transform=nn.Identity(postprocess=..., returns 2 values), "
        f"head=nn.Identity()), {INFERRED}")


def test_a_stand_in_whose_output_is_taken_as_a_dict_returns_one(report):
    # an identity gives one tensor, whose `.values()` the comprehension would iterate (FX002)
    assert _traced_with(report, "FeatureMaps") == (
        f"FeatureMaps(backbone=nn.Identity(returns {{'0', '1', '2'}})), {INFERRED}")
    assert not [d for d in report.diagnostics if d.module == "FeatureMaps"]


def test_fx101_names_the_guess_and_the_failed_use_when_nothing_fits(report):
    found = [d for d in report.diagnostics if d.module == "NothingFits"]
    assert [d.code for d in found] == ["FX101"]
    (fx101,) = found
    line = _line_of("class NothingFits(nn.Module):")
    assert (fx101.severity.value, fx101.span.line, fx101.span.col, fx101.span.end_line,
            fx101.span.end_col) == ("information", line, 6, line, 17)
    use = _line_of("        return self.heads(x) * len(self.heads)")
    assert (f"its trace fails on fxls's guess, not on the code: `self.heads` (a stand-in "
            f"module) is given to len() at {Path(fx101.span.file).name}:{use}") in fx101.message
    assert _module(report, "NothingFits").status.value == "skipped"


def test_the_code_s_own_error_is_still_reported(report):
    (fx001,) = [d for d in report.diagnostics if d.module == "RealError"]
    line = _line_of("        if y.sum() > 0:")
    assert (fx001.code, fx001.span.line, fx001.span.col, fx001.span.end_line,
            fx001.span.end_col) == ("FX001", line, 11, line, 22)
    assert _module(report, "RealError").entry == f"RealError(block=nn.Identity()), {INFERRED}"


def test_the_text_being_edited_is_read_not_the_file_on_disk(tmp_path: Path):
    # the editor's unsaved text has the forward two lines lower than the saved file
    saved = MODELS.split("class NothingFits", 1)[0] + "class NothingFits" + MODELS.split(
        "class NothingFits", 1)[1].split("class RealError", 1)[0]
    edited = saved.replace("    def forward(self, x):\n        return self.heads(x)",
                           "    # a comment\n\n    def forward(self, x):\n"
                           "        return self.heads(x)")
    path = tmp_path / f"edited_{tmp_path.name}.py"
    path.write_text(saved, encoding="utf-8")
    report = analyze_source(str(path), edited, load_settings(tmp_path))
    (fx101,) = [d for d in report.diagnostics if d.module == "NothingFits"]
    use = edited.splitlines().index("        return self.heads(x) * len(self.heads)") + 1
    assert f"is given to len() at {path.name}:{use}" in fx101.message
