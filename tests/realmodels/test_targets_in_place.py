"""The export and compile targets on a library file checked where it lives (issue 33):
transformers' ``modeling_bert.py`` in place. The symbolic-trace tier infers no inputs for
most of its classes (every argument of BertModel's ``forward`` is optional and its trace
stops before ``input_ids`` reaches a layer; the layers are called with keyword arguments);
the models get what their first layer takes and the layers what the models give them, so
22 of its 25 classes are exported and compiled (6 before). torch exports and compiles BERT
without a failure or a break (test_real_targets.py's ``Bert``, in a plain process): so
does fxls, with no FX2xx/FX3xx. The three left: a base class without ``forward``, the
cross-attention no model of the file calls, the multiple-choice model whose inputs have
one more dimension.

Optional: skipped unless the zoo is installed (scripts/install_model_zoo.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()
SITE = ZOO / "site"
BERT = SITE / "transformers" / "models" / "bert" / "modeling_bert.py"

pytestmark = pytest.mark.skipif(not BERT.is_file(),
                                reason=f"model zoo not installed in {ZOO}")


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--timeout", "900", "--target", "export,compile", str(BERT)],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path_factory.mktemp("bert"),
        env={**os.environ, "PYTHONPATH": str(SITE)})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    (report,) = json.loads(done.stdout)["files"]
    return dict(report)


def _statuses(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {m["name"]: m["targets"] for m in report["modules"]}


def test_bert_in_place_runs_its_models_and_their_layers(bert: dict[str, Any]) -> None:
    statuses = _statuses(bert)
    ran = [name for name, targets in statuses.items()
           if targets == {"export": "exported", "compile": "compiled"}]
    assert len(ran) == 22
    for name in ("BertModel", "BertForMaskedLM", "BertLayer", "BertSelfAttention",
                 "BertEmbeddings", "BertPooler"):
        assert name in ran


def test_what_does_not_run_eagerly_stays_not_run(bert: dict[str, Any]) -> None:
    statuses = _statuses(bert)
    for name in ("BertCrossAttention", "BertForMultipleChoice"):
        assert all(status.startswith("not run: the module raises on the example inputs")
                   for status in statuses[name].values())
    assert not [d for d in bert["diagnostics"] if d["code"][:3] in ("FX2", "FX3")]
