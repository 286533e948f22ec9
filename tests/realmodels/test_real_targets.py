"""The export and compile targets on real models from the zoo (Hugging Face BERT, GPT-2, T5,
Llama, Mixtral, Switch Transformers, wav2vec2 with its CTC loss; timm's ViT and its
recurrent Sequencer; torchvision's ResNet and Faster R-CNN), against torch itself as
tests/export_compile does for small ones.

Each model is built small inside a class of the user's (``zoo_targets/models.py``) and goes
through ``fxls check --target export,compile`` and, in a plain process, through
``torch._dynamo.explain``, ``torch.export.export`` and ``draft_export``
(``zoo_targets/torch_says.py``). fxls reports each graph break and export failure torch
reports (count and kind), at the user's line (its call into the library when torch's stack
is all library code), and nothing torch does not.

Two library files are checked where they live, in the same ``fxls check``: transformers'
Switch Transformers (its router and experts, against torch) and ``modeling_bert.py``. The
symbolic-trace tier infers no inputs for most of BERT's classes (every argument of
BertModel's ``forward`` is optional and its trace stops before ``input_ids`` reaches a layer;
the layers are called with keyword arguments); the models get what their first layer takes
and the layers what the models give them, so 22 of its 25 classes are exported and compiled
(6 before). torch exports and compiles BERT without a failure or a break (``Bert`` here, in
a plain process): so does fxls, with no FX2xx/FX3xx. The three left: a base class without
``forward``, the cross-attention no model of the file calls, the multiple-choice model whose
inputs have one more dimension.

Optional: skipped unless the zoo is installed (scripts/install_model_zoo.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.torch_answers import torch_answer

HERE = Path(__file__).parent
CASE = HERE / "zoo_targets"
ZOO = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()
SITE = ZOO / "site"
SOURCE = (CASE / "models.py").read_text(encoding="utf-8")

pytestmark = pytest.mark.skipif(
    not all((SITE / name).is_dir() for name in ("transformers", "timm", "torchvision")),
    reason=f"model zoo not installed in {ZOO} (scripts/install_model_zoo.py)")

CLASSES = ["Bert", "Gpt2", "Gpt2WithCache", "T5", "Llama", "Mixtral", "SwitchEncoder",
           "Wav2Vec2Ctc", "Vit", "Sequencer", "ResNet", "FasterRcnn"]


def _with_zoo() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SITE)}


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's file in a folder of its own (no pyproject of fxls's checkout applies)."""
    path = tmp_path_factory.mktemp("zoo_targets") / "models.py"
    shutil.copy(CASE / "models.py", path)
    return path


SWITCH = SITE / "transformers" / "models" / "switch_transformers" / \
    "modeling_switch_transformers.py"
BERT = SITE / "transformers" / "models" / "bert" / "modeling_bert.py"


@pytest.fixture(scope="module")
def checked(user_file: Path) -> dict[str, dict[str, Any]]:
    """The user's file and the two library files in place, by one ``fxls check --target
    export,compile``: each report by its file's name."""
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--timeout", "900", "--target", "export,compile", str(user_file), str(SWITCH),
         str(BERT)],
        capture_output=True, text=True, cwd=user_file.parent, timeout=1800, env=_with_zoo())
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {Path(report["path"]).name: report for report in json.loads(done.stdout)["files"]}


@pytest.fixture(scope="module")
def fxls_says(checked: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return checked["models.py"]


@pytest.fixture(scope="module")
def torch_says(user_file: Path) -> dict[str, Any]:
    script = CASE / "torch_says.py"
    answer = torch_answer([sys.executable, str(script), str(user_file)], [script, user_file],
                          cwd=user_file.parent, env=_with_zoo(), timeout=1800)
    said: dict[str, Any] = json.loads(answer.strip().splitlines()[-1])
    return said


def _users_call(name: str) -> int:
    """The class's line that calls into the library (marked in the file)."""
    lines = SOURCE.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"class {name}(")))
    return next(number for number, line in enumerate(lines[start:], start + 1)
                if "# the user's call" in line)


def _found(report: dict[str, Any], name: str, prefix: str) -> list[dict[str, Any]]:
    return [d for d in report["diagnostics"]
            if d["module"] == name and d["code"].startswith(prefix)]


def _lines(found: list[dict[str, Any]]) -> list[int]:
    return sorted(d["range"]["start"]["line"] + 1 for d in found)


def _status(report: dict[str, Any], name: str, target: str) -> str:
    (module,) = [m for m in report["modules"] if m["name"] == name]
    return str(module["targets"][target])


def _break_words(gb_type: str) -> str:
    """How fxls names a break of this type (a jump on a tensor's value in plain words)."""
    return "branch on a tensor's value" if gb_type.startswith("generic_jump") else gb_type


@pytest.mark.parametrize("name", CLASSES)
def test_graph_breaks_are_dynamos(fxls_says: dict[str, Any], torch_says: dict[str, Any],
                                  name: str) -> None:
    said = torch_says[name]["compile"]
    status, found = _status(fxls_says, name, "compile"), _found(fxls_says, name, "FX3")
    if said["error"]:  # dynamo raised: FX309 where it did
        assert status == "failed"
        assert [(d["code"], d["range"]["start"]["line"] + 1) for d in found] == [
            ("FX309", said["error_line"] or _users_call(name))]
        assert said["error"] in found[0]["message"]
        return
    count = len(said["breaks"])
    assert status == ("compiled" if not count else
                      f"{count} graph break{'s' if count != 1 else ''}")
    assert _lines(found) == sorted({b["line"] or _users_call(name) for b in said["breaks"]})
    said_by_fxls = " ".join(d["message"] for d in found)
    for graph_break in said["breaks"]:
        assert _break_words(graph_break["gb_type"]) in said_by_fxls


#: torch's failure kinds as fxls's codes
_EXPORT_CODES = {"GuardOnDataDependentSymNode": "FX201", "DATA_DEPENDENT_ERROR": "FX201",
                 "DynamicOutputShapeException": "FX201", "MISSING_FAKE_KERNEL": "FX203"}


def _export_failures(said: dict[str, Any], name: str) -> set[tuple[str, int, str]]:
    """(code, line, which) of each failure torch reports: export's, draft_export's findings
    and draft_export's own failure; the same guard met by both is one failure."""
    failures = [(said["error"], said["error_line"], said["what"]),
                *[(drafted["kind"], drafted["line"], drafted["what"])
                  for drafted in said["drafted"]]]
    if said.get("draft_error"):
        failures.append((said["draft_error"], said["draft_error_line"],
                         said["draft_error_what"]))
    return {(_EXPORT_CODES.get(kind, "FX209"), line or _users_call(name), what)
            for kind, line, what in failures}


@pytest.mark.parametrize("name", CLASSES)
def test_export_failures_are_torchs(fxls_says: dict[str, Any], torch_says: dict[str, Any],
                                    name: str) -> None:
    said = torch_says[name]["export"]
    status, found = _status(fxls_says, name, "export"), _found(fxls_says, name, "FX2")
    if said["exported"]:
        assert (status, found) == ("exported", [])
        return
    expected = _export_failures(said, name)
    assert {(d["code"], d["range"]["start"]["line"] + 1) for d in found} == {
        (code, line) for code, line, _ in expected}
    assert status == f"failed: {len(expected)} problem{'s' if len(expected) != 1 else ''}"
    said_by_fxls = " ".join(d["message"] for d in found)
    for _, _, what in expected:  # each failure in torch's words (a guard, an operator)
        assert what.split(" in output")[0] in said_by_fxls


def test_no_symbolic_trace_codes_where_only_export_and_compile_are_targeted(
        fxls_says: dict[str, Any]) -> None:
    assert {d["target"] for d in fxls_says["diagnostics"]} <= {"export", "compile"}
    assert fxls_says["targets"]["targets"] == ["export", "compile"]


def test_a_break_inside_the_library_names_it_at_the_users_call(
        fxls_says: dict[str, Any]) -> None:
    """wav2vec2's CTC loss breaks in transformers' loss function, compiled on its own after
    a break in the model: the diagnostic is at the user's call, names each library function
    by its name in the source (not dynamo's resume function) and the expression that broke."""
    (found,) = _found(fxls_says, "Wav2Vec2Ctc", "FX301")
    message = found["message"]
    assert message.startswith("3 graph breaks here (compiling `Wav2Vec2Ctc`)")
    assert "inside `transformers.loss.loss_ctc.ForCTCLoss`" in message
    assert "torch_dynamo_resume" not in message
    assert message.count("(compiling") == 1


def test_a_returned_cache_is_reported_at_the_return(fxls_says: dict[str, Any]) -> None:
    """export cannot flatten transformers' ``DynamicCache``: torch's error has no frame of
    the user's; fxls reports it at what ``forward`` returns."""
    (found,) = _found(fxls_says, "Gpt2WithCache", "FX209")
    line = _users_call("Gpt2WithCache")
    start = SOURCE.splitlines()[line - 1].index("self.model(input_ids)")
    assert found["range"]["start"] == {"line": line - 1, "character": start}
    assert "cannot flatten what `forward` returns" in found["message"]
    assert "DynamicCache" in found["message"]


def test_torch_long_errors_are_cut_to_their_first_sentence(fxls_says: dict[str, Any]) -> None:
    """torchvision's error for its missing C++ ops is 600 characters; its first sentence
    says it."""
    (found,) = _found(fxls_says, "FasterRcnn", "FX309")
    assert found["message"] == (
        "compiling `FasterRcnn` raised inside `torchvision.extension._assert_has_ops`, "
        "reached from here: RuntimeError: Couldn't load custom C++ ops")


_SWITCH_IN_TORCH = f"""
import json, traceback, torch, torch._dynamo
from transformers import SwitchTransformersConfig
from transformers.models.switch_transformers import modeling_switch_transformers as m
config = SwitchTransformersConfig(d_model=32, d_ff=37, num_experts=4)
inputs = (torch.randn(2, 7, 32),)
try:
    torch.export.export(m.SwitchTransformersTop1Router(config).eval(), inputs)
    raised = []
except Exception as error:
    raised = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
              if frame.filename == {str(SWITCH)!r}]
explained = torch._dynamo.explain(m.SwitchTransformersSparseMLP(config).eval())(*inputs)
print(json.dumps({{"router_raised": raised[-1:], "breaks": sorted({{
    reason.user_stack[-1].lineno for reason in explained.break_reasons}})}}))
"""


def test_switch_transformers_in_place(checked: dict[str, dict[str, Any]]) -> None:
    """transformers' Switch Transformers file checked where it lives: its router casts its
    own layer inside ``forward`` (export cannot swap a parameter while tracing), its experts
    run on the tokens routed to them (``nonzero``: a graph break), as torch says."""
    answer = torch_answer([sys.executable, "-c", _SWITCH_IN_TORCH], [], cwd=HERE,
                          env=_with_zoo(), timeout=900)
    said = json.loads(answer.strip().splitlines()[-1])
    report = checked[SWITCH.name]
    assert not [d for d in report["diagnostics"] if d["code"].startswith("FX0")]
    router = _found(report, "SwitchTransformersTop1Router", "FX2")
    assert [(d["code"], d["range"]["start"]["line"] + 1) for d in router] == [
        ("FX209", *said["router_raised"])]
    assert "`self.classifier.to(self.dtype)`" in router[0]["message"]
    # the break is in the experts' forward: reported once, for the experts (they run on the
    # call their model makes) or the model, whichever ran first
    breaks = [*_found(report, "SwitchTransformersExperts", "FX301"),
              *_found(report, "SwitchTransformersSparseMLP", "FX301")]
    assert _lines(breaks) == said["breaks"] and "GB0036" in breaks[0]["message"]


def _statuses(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {m["name"]: m["targets"] for m in report["modules"]}


def test_bert_in_place_runs_its_models_and_their_layers(
        checked: dict[str, dict[str, Any]]) -> None:
    statuses = _statuses(checked[BERT.name])
    ran = [name for name, targets in statuses.items()
           if targets == {"export": "exported", "compile": "compiled"}]
    assert len(ran) == 22
    for name in ("BertModel", "BertForMaskedLM", "BertLayer", "BertSelfAttention",
                 "BertEmbeddings", "BertPooler"):
        assert name in ran


def test_what_does_not_run_eagerly_stays_not_run(checked: dict[str, dict[str, Any]]) -> None:
    bert = checked[BERT.name]
    statuses = _statuses(bert)
    for name in ("BertCrossAttention", "BertForMultipleChoice"):
        assert all(status.startswith("not run: the module raises on the example inputs")
                   for status in statuses[name].values())
    assert not [d for d in bert["diagnostics"] if d["code"][:3] in ("FX2", "FX3")]
