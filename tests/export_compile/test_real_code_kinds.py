"""Failure kinds met in real code (``real_code_kinds.py``) against torch itself, as
test_torch_tiers.py does for the first ones: each failure torch reports (draft_export's own
failure included) at its line and nothing else, each at its exact range and in words that
say what to do."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.torch_answers import torch_answer

HERE = Path(__file__).parent
SOURCE = (HERE / "real_code_kinds.py").read_text(encoding="utf-8")
CLASSES = ["ReturnsObject", "CtcLoss", "Recurrent"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("real_code_kinds")
    shutil.copy(HERE / "real_code_kinds.py", folder / "models.py")
    return folder


@pytest.fixture(scope="module")
def fxls_says(folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--target", "export,compile", str(folder / "models.py")],
        capture_output=True, text=True, cwd=folder, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    (report,) = json.loads(done.stdout)["files"]
    return report


@pytest.fixture(scope="module")
def torch_says(folder: Path) -> dict[str, Any]:
    script = HERE / "torch_reference.py"
    answer = torch_answer([sys.executable, str(script), str(folder / "models.py")],
                          [script, folder / "models.py"], cwd=folder, timeout=600)
    said: dict[str, Any] = json.loads(answer.strip().splitlines()[-1])
    return said


def _found(report: dict[str, Any], name: str, prefix: str) -> list[dict[str, Any]]:
    return [d for d in report["diagnostics"]
            if d["module"] == name and d["code"].startswith(prefix)]


def _range_of(fragment: str) -> dict[str, Any]:
    (line,) = [number for number, text in enumerate(SOURCE.splitlines()) if fragment in text]
    start = SOURCE.splitlines()[line].index(fragment)
    return {"start": {"line": line, "character": start},
            "end": {"line": line, "character": start + len(fragment)}}


@pytest.mark.parametrize("name", CLASSES)
def test_export_failures_are_torchs(fxls_says: dict[str, Any], torch_says: dict[str, Any],
                                    name: str) -> None:
    said = torch_says[name]
    if said["exported"]:
        assert _found(fxls_says, name, "FX2") == []
        return
    # no line of the file in torch's stack: the outputs failed, at what `forward` returns
    expected = {line for line in [said["export_line"], *said["drafted"]] if line} or {
        _last_return(name)}
    found = {d["range"]["start"]["line"] + 1 for d in _found(fxls_says, name, "FX2")}
    assert found == expected


def _last_return(name: str) -> int:
    lines = SOURCE.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"class {name}(")))
    end = next((number for number, line in enumerate(lines[start + 1:], start + 1)
                if line.startswith("class ")), len(lines))
    return max(number for number, line in enumerate(lines[start:end], start + 1)
               if line.strip().startswith("return "))


@pytest.mark.parametrize("name", CLASSES)
def test_graph_breaks_are_dynamos(fxls_says: dict[str, Any], torch_says: dict[str, Any],
                                  name: str) -> None:
    found = {d["range"]["start"]["line"] + 1 for d in _found(fxls_says, name, "FX301")}
    assert found == set(torch_says[name]["breaks"])


def test_a_returned_object_export_cannot_flatten_is_at_the_return(
        fxls_says: dict[str, Any]) -> None:
    """torch's error has no frame of the user's: it is raised flattening the outputs."""
    (found,) = _found(fxls_says, "ReturnsObject", "FX2")
    assert (found["code"], found["range"]) == ("FX209", _range_of("Holder(x + 1)"))
    assert found["message"].startswith(
        "export cannot flatten what `forward` returns, `Holder(x + 1)`: return tensors")
    assert "Holder'> in output, which is not a known type;" in found["message"]


def test_draft_exports_own_failure_is_one_more(fxls_says: dict[str, Any]) -> None:
    """export stops at the check of the labels; draft_export decides it and then fails on
    the CTC loss, whose output size depends on the data: both reported, each at its line."""
    by_range = {json.dumps(d["range"]): d for d in _found(fxls_says, "CtcLoss", "FX2")}
    check = by_range[json.dumps(_range_of("targets.max() >= log_probs.shape[-1]"))]
    loss = by_range[json.dumps(_range_of("F.ctc_loss(log_probs, targets, lengths, "
                                         "target_lengths)"))]
    assert check["code"] == loss["code"] == "FX201"
    assert "the output size of `aten._ctc_loss.Tensor` depends on the data" in loss["message"]
    (module,) = [m for m in fxls_says["modules"] if m["name"] == "CtcLoss"]
    assert module["targets"]["export"] == "failed: 2 problems"


def test_an_lstm_is_one_break_at_its_call(fxls_says: dict[str, Any]) -> None:
    """dynamo runs the LSTM in Python: one break at the call, with torch's type and page."""
    (found,) = _found(fxls_says, "Recurrent", "FX301")
    assert found["range"] == _range_of("self.rnn(x)")
    assert "Attempted to wrap RNN, GRU, or LSTM (GB0014)" in found["message"]
    (module,) = [m for m in fxls_says["modules"] if m["name"] == "Recurrent"]
    assert module["targets"]["compile"] == "1 graph break"
