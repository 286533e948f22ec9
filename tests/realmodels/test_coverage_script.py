"""benchmarks/coverage_real_models.py without the zoo: says how to install it, exits 0."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "coverage_real_models.py"


def test_absent_zoo_prints_install_command(tmp_path: Path, capsys) -> None:
    spec = importlib.util.spec_from_file_location("coverage_real_models", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--zoo", str(tmp_path / "zoo"), "--limit", "1"]) == 0
    out = capsys.readouterr().out
    assert "scripts/install_model_zoo.py" in out
    assert f"--dest {tmp_path / 'zoo'}" in out


def _script():
    spec = importlib.util.spec_from_file_location("coverage_real_models", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_built_means_fxls_had_an_instance() -> None:
    script = _script()
    assert script.is_not_built("skipped", "its constructor needs `dim`")
    assert script.is_not_built("failed", "its constructor raised ValueError")
    assert script.is_not_built("skipped", "with arguments inferred from their use (dim=32) its "
                               "constructor raised AssertionError: ...")
    # no instance needed: a base class without forward, a declared leaf, a skip pragma
    assert not script.is_not_built("skipped", "it has no forward of its own (a base class): "
                                   "nothing to trace")
    assert not script.is_not_built("skipped", "`# fxls: skip`")
    assert not script.is_not_built("failed", None)  # built, then the trace failed
    assert not script.is_not_built("partial", None)


def test_files_are_grouped_by_package() -> None:
    script = _script()
    assert script.package_of("/z/site/timm/models/resnet.py") == "timm"
    assert script.package_of("/z/site/torchvision/models/resnet.py") == "torchvision"
    assert script.package_of(
        "/z/site/torchvision/models/detection/fcos.py") == "torchvision.detection"
    assert script.package_of("/x/transformers/models/bert/modeling_bert.py") == "transformers"
