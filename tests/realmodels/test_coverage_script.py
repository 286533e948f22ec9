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
