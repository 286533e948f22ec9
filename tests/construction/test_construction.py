"""Every class built, whatever its parameters are called: values inferred from how the
constructor uses them (tests/data/construction), weights never downloaded, and FX101 only
when nothing works, naming the check that failed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fxls.analysis.pipeline import analyze_source
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import FileReport, ModuleReport

DATA = Path(__file__).parents[1] / "data" / "construction"


def _analyze(tmp_path: Path, name: str) -> FileReport:
    # a module name of its own: an in-process analysis imports the file as that module
    path = tmp_path / f"{Path(name).stem}_{tmp_path.name}.py"
    shutil.copy(DATA / name, path)
    return analyze_source(str(path), path.read_text(encoding="utf-8"),
                          Settings(project=ProjectLayout(root=str(tmp_path))))


@pytest.fixture(scope="module")
def inferred(tmp_path_factory: pytest.TempPathFactory) -> FileReport:
    return _analyze(tmp_path_factory.mktemp("inferred"), "inferred.py")


def _module(report: FileReport, name: str) -> ModuleReport:
    (found,) = [m for m in report.modules if m.name == name]
    return found


def _entry(report: FileReport, name: str) -> str | None:
    module = _module(report, name)
    assert module.status.value in ("traced", "partial"), (name, module.reason)
    return module.entry


def test_a_size_not_named_as_one_is_a_size_by_its_use(inferred):
    assert _entry(inferred, "FeedForward") == (
        "FeedForward(dim=32, mlp_dim=32), arguments inferred from their use")


def test_counts_and_sizes_of_any_name(inferred):
    # `range(n_stages)`: a count; `sm_dim`, `fmap_size`: sizes
    assert _entry(inferred, "Stages") == (
        "Stages(sm_dim=32, n_stages=1, fmap_size=32), arguments inferred from their use")


def test_a_module_parameter_gets_the_class_the_file_passes_there(inferred):
    # make_block() passes `FeedForward(dim, dim * 2)` as PreNorm's `fn`
    assert _entry(inferred, "PreNorm") == (
        "PreNorm(dim=32, fn=FeedForward(...)), arguments inferred from their use")


def test_a_module_called_in_forward_gets_an_identity(inferred):
    assert _entry(inferred, "Residual") == (
        "Residual(net=nn.Identity()), arguments inferred from their use")


def test_a_module_whose_attributes_are_read_gets_them(inferred):
    # `backbone.out_channels`: an identity module carrying `out_channels=32`
    assert _entry(inferred, "Detector") == (
        "Detector(backbone=nn.Identity(out_channels=...), num_classes=10), arguments inferred "
        "from their use")


def test_a_class_parameter_the_constructor_calls_gets_a_module_class(inferred):
    assert _entry(inferred, "Stack") == (
        "Stack(block=nn.Identity, dim_in=32, depth=1), arguments inferred from their use")


def test_values_are_searched_until_the_constructors_own_check_passes(inferred):
    # lora_rank=32, dim=32 fails "lora_rank (32) must be less than dim (32)"; dim=64 passes
    assert _entry(inferred, "LoRA") == (
        "LoRA(dim=64, lora_rank=32), arguments inferred from their use")


def test_a_mapping_gets_the_keyword_arguments_of_the_class_it_is_handed_to(inferred):
    assert _entry(inferred, "Encoder") == (
        "Encoder(dim=32, ff_params={'mlp_dim': 32}), arguments inferred from their use")


def test_a_sequence_gets_the_length_the_constructor_checks(inferred):
    assert _entry(inferred, "Pyramid") == (
        "Pyramid(dims=(32, 32, 32)), arguments inferred from their use")


def test_an_image_size_is_searched_until_its_patches_divide_it(inferred):
    assert _entry(inferred, "Patches") == (
        "Patches(image_size=96), arguments inferred from their use")


def test_optional_sizes_a_check_wants_are_given_too(inferred):
    assert _entry(inferred, "Tokens") == (
        "Tokens(dim=32, depth=1, heads=4), arguments inferred from their use")


def test_an_object_of_layer_factories_gets_identity_classes(inferred):
    assert _entry(inferred, "LayerFactories") == (
        "LayerFactories(dim=32, layers=nn.Identity(act=..., conv=...)), arguments inferred "
        "from their use")


def test_kwargs_handed_to_a_base_class_are_supplied(inferred):
    assert _entry(inferred, "Derived") == (
        "Derived(num_anchors=32, min_size=32), arguments inferred from their use")
    assert not [d for d in inferred.diagnostics if d.module == "Derived"]


def test_fx101_only_when_nothing_works_naming_the_check_that_failed(inferred):
    (fx101,) = [d for d in inferred.diagnostics if d.module == "Impossible"]
    source = (DATA / "inferred.py").read_text(encoding="utf-8")
    line = source.splitlines().index("class Impossible(nn.Module):") + 1
    assert (fx101.code, fx101.span.line, fx101.span.col, fx101.span.end_line,
            fx101.span.end_col) == ("FX101", line, 6, line, 16)
    check = source.splitlines().index('        assert dim < 0, f"dim must be negative, '
                                      'got {dim}"') + 1
    assert _module(inferred, "Impossible").reason == (
        "with arguments inferred from their use (dim=32) its constructor raised "
        f"AssertionError: dim must be negative, got 32 at {Path(fx101.span.file).name}:"
        f"{check} (`assert dim < 0, f\"dim must be negative, got {{dim}}\"`)")
    assert "needs `dim`" not in fx101.message


def test_fx101_points_at_the_model_line_when_a_torch_layer_rejects_the_values(inferred):
    (fx101,) = [d for d in inferred.diagnostics if d.module == "Negative"]
    source = (DATA / "inferred.py").read_text(encoding="utf-8")
    line = source.splitlines().index("        self.lin = nn.Linear(dim, 2 - dim)") + 1
    assert (f"at {Path(fx101.span.file).name}:{line} (`self.lin = nn.Linear(dim, 2 - dim)`)"
            in fx101.message)


def test_weights_and_pretrained_parameters_are_always_off(tmp_path: Path):
    report = _analyze(tmp_path, "weights.py")
    assert _module(report, "Detector").status.value == "traced"
    # the factory's `weights_backbone` defaults to downloadable weights: passed as None
    assert _entry(report, "Segmenter") == "segmenter_small(weights=None, weights_backbone=None)"
    assert not [d for d in report.diagnostics if d.code in ("FX004", "FX101")]


def test_a_module_named_like_its_package_imports_with_the_package_on_the_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # pkg/pkg.py, no pyproject.toml, the import root already on sys.path (as PYTHONPATH
    # puts it): the file's folder must not come first, or `pkg` is pkg/pkg.py
    package = tmp_path / "pkg22"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(
        "from torch import nn\n\n\nclass Layer(nn.Module):\n"
        "    def forward(self, x):\n        return x + 1\n")
    source = ("from torch import nn\nfrom pkg22.layers import Layer\n\n\n"
              "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.layer = Layer()\n\n    def forward(self, x):\n"
              "        return self.layer(x)\n")
    (package / "pkg22.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    report = analyze_source(str(package / "pkg22.py"), source,
                            Settings(project=ProjectLayout(root=str(package))))
    assert not report.diagnostics
    assert _module(report, "Net").status.value == "traced"
