"""Messages in the user's terms and in the user's places (tests/data/messages): stand-ins
never named, a warning from a helper placed at the user's line, hints for known failures,
no FX015 caused by fxls's own guesses, one path per file in the CLI's output."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fxls.analysis.pipeline import analyze_source
from fxls.analysis.wording import in_user_terms
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import Diagnostic, FileReport

DATA = Path(__file__).parents[1] / "data" / "messages"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("messages")
    shutil.copytree(DATA / "helpers", target / "helpers")
    shutil.copy(DATA / "models.py", target / f"models_{target.name}.py")
    return target


@pytest.fixture(scope="module")
def report(project: Path) -> FileReport:
    (path,) = project.glob("models_*.py")
    return analyze_source(str(path), path.read_text(encoding="utf-8"),
                          Settings(project=ProjectLayout(root=str(project))))


def _range(source: str, text: str) -> tuple[int, int, int]:
    """(line, start column, end column) of ``text``'s only occurrence (UTF-8 bytes, ASCII)."""
    (line,) = [i for i, row in enumerate(source.splitlines(), 1) if text in row]
    col = source.splitlines()[line - 1].index(text)
    return line, col, col + len(text)


def _only(report: FileReport, module: str, code: str) -> Diagnostic:
    (found,) = [d for d in report.diagnostics if d.module == module and d.code == code]
    return found


def _where(d: Diagnostic) -> tuple[int, int, int]:
    assert d.span.line == d.span.end_line
    return d.span.line, d.span.col, d.span.end_col


def test_a_library_rejecting_a_traced_value_never_names_the_stand_in(report):
    fx004 = _only(report, "Mixer", "FX004")
    source = (DATA / "models.py").read_text(encoding="utf-8")
    raise_line = 'raise RuntimeError(f"Tensor type unknown to einops {type(x)}")'
    assert _where(fx004) == _range(source, raise_line)
    assert "Proxy" not in fx004.message and "fxcore" not in fx004.message
    assert fx004.message.startswith(
        "RuntimeError: einops does not know the type of a traced value (raised while tracing "
        "`Mixer`); einops cannot see through a traced value: use its layers")


def test_a_warning_logged_by_a_helper_is_placed_at_the_users_line(report, project):
    fx013 = _only(report, "Warns", "FX013")
    source = (DATA / "models.py").read_text(encoding="utf-8")
    assert Path(fx013.span.file).name.startswith("models_")
    assert _where(fx013) == _range(source, 'warning_once(logger, "slow path")')
    (related,) = fx013.related
    helper = (project / "helpers" / "logs.py")
    assert related.span.file == str(helper)
    assert related.span.line == _range(helper.read_text(), "logger.warning(message)")[0]
    assert related.message == "`logging.warning` runs here"


def test_no_fx015_when_fxls_guessed_both_the_arguments_and_the_inputs(report):
    # Bottleneck(inplanes=32, planes=32) adds 128 channels to 32: fxls's guess, not a bug
    bottleneck = next(m for m in report.modules if m.name == "Bottleneck")
    assert bottleneck.entry == (
        "Bottleneck(inplanes=32, planes=32), arguments inferred from their use")
    assert not [d for d in report.diagnostics if d.module == "Bottleneck"]


def test_stand_ins_in_library_messages_are_a_traced_value():
    assert in_user_terms(
        "expecting the last two dimensions of the Tensor to be H and W instead got "
        "Proxy(getitem_2)") == ("expecting the last two dimensions of the Tensor to be H and W "
                                "instead got a traced value")
    assert in_user_terms("'Proxy' object does not support item assignment") == (
        "a traced value does not support item assignment")
    assert in_user_terms(
        "Tensor type unknown to einops <class 'torch.fx.proxy.Proxy'>").startswith(
        "einops does not know the type of a traced value; ")


def test_the_wrapper_failure_of_hugging_face_models_gets_a_hint():
    message = in_user_terms("ValueError: code: co_varnames is too small")
    assert message.startswith("ValueError: code: co_varnames is too small; `forward` is "
                              "reached through a wrapper that takes `*args, **kwargs`")
    assert "can_return_tuple" in message and "GradientCheckpointingLayer" in message


def test_a_siblings_problem_is_printed_once_under_one_path(tmp_path: Path):
    models = tmp_path / "mymodels"
    models.mkdir()
    (models / "blocks.py").write_text(
        "from torch import nn\n\n\nclass Block(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.lin = nn.Linear(8, 8)\n\n"
        "    def forward(self, x):\n        h = self.lin(x)\n        if h.sum() > 0:\n"
        "            h = h.relu()\n        return h\n")
    (models / "net.py").write_text(
        "from torch import nn\n\nfrom blocks import Block\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
        "    def forward(self, x):\n        return self.block(x)\n")
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--no-progress", "mymodels"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.stdout.splitlines() == [
        "mymodels/blocks.py:11:12: FX001 `h.sum() > 0` depends on a traced value and decides "
        "control flow: symbolic tracing cannot follow a data-dependent branch"]


MASKED = '''import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.mask_token = None  # only a model built for masking has one

    def forward(self, x, mask=None):
        h = self.proj(x)
        if mask is not None:
            h = h * (1 - mask) + self.mask_token.expand(h.shape) * mask
        return h
'''


def test_an_exception_in_the_branch_of_a_none_default_parameter_gets_a_hint(tmp_path: Path):
    """``mask`` is an input of the trace, so ``mask is not None`` holds and the masking
    branch runs on a model that has no mask token: torch.fx raises the same, and traces it
    with ``concrete_args={'mask': None}``, which the hint says (and its pragma does)."""
    import torch.fx

    path = tmp_path / f"masked_{tmp_path.name}.py"
    path.write_text(MASKED, encoding="utf-8")
    settings = Settings(project=ProjectLayout(root=str(tmp_path)))
    fx004 = _only(analyze_source(str(path), MASKED, settings), "Embeddings", "FX004")
    assert _where(fx004) == _range(MASKED, "self.mask_token.expand")
    assert fx004.message.startswith("AttributeError: 'NoneType' object has no attribute "
                                    "'expand' (raised while tracing `Embeddings`)")
    assert fx004.message.endswith(
        "; `mask` defaults to None but is a traced input here, so the branch of `mask is not "
        "None` ran: trace with `concrete_args={'mask': None}` (`# fxls: concrete {'mask': "
        "None}`)")
    namespace: dict = {}
    exec(compile(MASKED, "masked.py", "exec"), namespace)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'expand'"):
        torch.fx.symbolic_trace(namespace["Embeddings"]())
    torch.fx.symbolic_trace(namespace["Embeddings"](), concrete_args={"mask": None})
    hinted = MASKED.replace("class Embeddings(nn.Module):",
                            "# fxls: concrete {'mask': None}\nclass Embeddings(nn.Module):")
    path.write_text(hinted, encoding="utf-8")
    assert analyze_source(str(path), hinted, settings).diagnostics == []
