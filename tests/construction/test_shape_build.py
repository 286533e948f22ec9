"""The tracing phase builds models without running their expensive weight initialisers; the
complete report builds them for real when it runs them (issue 23). Initialisers that cost
little next to the rest of the build run in the tracing phase: such a model is built once."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from fxls.analysis.pipeline import analyze_source
from fxls.analysis.shape_build import Budget, initialisers_skipped
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import source_text
from fxls.report import FileReport, ModuleReport, check_report

RAISING = '''import torch
from torch import nn

MARK = {mark!r}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        open(MARK, "a").write("initialised\\n")
        raise RuntimeError("no initialiser for " + type(module).__name__)

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return self.lin(x)


class Custom(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.init_weights()

    def init_weights(self):
        open(MARK, "a").write("custom\\n")
        raise NotImplementedError("init_weights")

    def forward(self, x):
        for row in x:
            x = x + row
        return self.lin(x)
'''

INITIALISED = '''import torch
from torch import nn

MARK = {mark!r}


# fxls: args (torch.ones(1, {width}),)
class Constant(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear({width}, 3)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        open(MARK, "a").write(type(module).__name__ + "\\n")
        if isinstance(module, nn.Linear):
            nn.init.constant_(module.weight, 0.5)
            nn.init.zeros_(module.bias)

    def forward(self, x):
        return self.lin(x)
'''

BUFFERS = '''import torch
from torch import nn


# fxls: args (torch.randn(2, 6),)
class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.zeros(6))
        self.mask[::2] = 1
        self.register_buffer("index", torch.arange(6).flip(0))
        self.register_buffer("scale", torch.empty(()).fill_(3.0))
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        if self.mask.sum() > 2:
            x = x * self.scale
        keep = [i for i in self.index.tolist() if i % 2 == 0]
        return self.lin(x)[:, keep]
'''

READS_WEIGHTS = '''import torch
from torch import nn


# fxls: args (torch.ones(1, 4),)
class ReadsWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.big = nn.Linear(2048, 2048)  # expensive to initialise: skipped from here on
        self.lin = nn.Linear(4, 4)
        nn.init.constant_(self.lin.weight, 0.25)
        nn.init.zeros_(self.lin.bias)

    def forward(self, x):
        weight = dict(self.named_parameters())["lin.weight"]
        return self.lin(x) * float(weight.detach().max())
'''

BUFFER_IN_INITIALISER = '''import torch
from torch import nn


# fxls: args (torch.randn(2, 4),)
class Switched(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("on", torch.zeros(()))
        self.lin = nn.Linear(4, 4)
        self.big = nn.Parameter(torch.empty(4_000_000))  # expensive: initialisers skipped
        self.reset_parameters()

    def reset_parameters(self):
        self.on.fill_(1.0)

    def forward(self, x):
        if self.on > 0:
            return torch.relu(self.lin(x))
        return self.lin(x)
'''


def _staged(tmp_path: Path, name: str, source: str) -> tuple[list[FileReport], FileReport]:
    """The reports ``on_diagnostics`` got, copied as sent, and the final one."""
    path = tmp_path / f"{name}_{tmp_path.name}.py"  # a module name of its own
    path.write_text(source, encoding="utf-8")
    sent: list[FileReport] = []
    final = analyze_source(str(path), source, Settings(project=ProjectLayout(root=str(tmp_path))),
                           lambda report: sent.append(_as_sent(report, path, source)))
    return sent, final


def _as_sent(report: FileReport, path: Path, source: str) -> FileReport:
    """``report`` as the runner receives it: encoded, then decoded by ``check_report``."""
    return check_report(report.to_dict(), path=str(path), text=source_text(source)).report


def _module(report: FileReport, name: str) -> ModuleReport:
    return next(m for m in report.modules if m.name == name)


def _at(source: str, text: str) -> tuple[int, int, int]:
    """(line, col, end_col) of ``text`` in ``source`` (1-based line, 0-based columns)."""
    for number, line in enumerate(source.splitlines(), 1):
        if text in line:
            return number, line.index(text), line.index(text) + len(text)
    raise AssertionError(text)


def _codes(report: FileReport) -> list[tuple[str, int, int, int, str | None]]:
    return [(d.code, d.span.line, d.span.col, d.span.end_col, d.module)
            for d in report.diagnostics]


def test_a_model_whose_initialiser_raises_gets_its_tracing_diagnostics(tmp_path: Path) -> None:
    mark = tmp_path / "initialisers.txt"
    marks_at_first: list[list[str]] = []
    path = tmp_path / f"raising_{tmp_path.name}.py"
    source = RAISING.format(mark=str(mark))
    path.write_text(source, encoding="utf-8")
    sent: list[FileReport] = []

    def first(report: FileReport) -> None:
        marks_at_first.append(mark.read_text().split())
        sent.append(_as_sent(report, path, source))

    final = analyze_source(str(path), source,
                           Settings(project=ProjectLayout(root=str(tmp_path))), first)

    # cheap: they ran in the tracing build, raised, and were skipped from there on
    assert marks_at_first == [["initialised", "custom"]]
    assert _codes(sent[0]) == [
        ("FX001", *_at(source, "x.sum() > 0"), "Model"),
        # the `for` statement, to the end of its body
        ("FX002", _at(source, "for row in x:")[0], 8, _at(source, "x = x + row")[2], "Custom"),
    ]
    assert [(m.name, m.status) for m in sent[0].modules] == [
        ("Model", "partial"), ("Custom", "partial")]
    # the complete report built them for real: their initialisers raised, reported as before
    failures = [(d.code, d.span.line, d.module) for d in final.diagnostics
                if d.code == "FX004"]
    assert failures == [("FX004", _at(source, "raise RuntimeError")[0], "Model"),
                        ("FX004", _at(source, "raise NotImplementedError")[0], "Custom")]
    messages = [d.message for d in final.diagnostics if d.code == "FX004"]
    assert messages[0].startswith("constructing `Model` raised RuntimeError: no initialiser")
    assert messages[1].startswith("constructing `Custom` raised NotImplementedError")
    assert [c for c in _codes(final) if c[0] != "FX004"] == _codes(sent[0])
    assert _module(final, "Model").reason == "its constructor raised RuntimeError"


def test_expensive_initialisers_run_only_for_the_complete_report(tmp_path: Path) -> None:
    mark = tmp_path / "initialisers.txt"
    marks_at_first: list[bool] = []
    path = tmp_path / f"initialised_{tmp_path.name}.py"
    source = INITIALISED.format(mark=str(mark), width=1 << 20)  # 3 M weights: ~30 ms
    path.write_text(source, encoding="utf-8")
    final = analyze_source(str(path), source, Settings(project=ProjectLayout(root=str(tmp_path))),
                           lambda report: marks_at_first.append(mark.exists()))

    assert marks_at_first == [False]
    assert mark.read_text().split() == ["Linear", "Constant"]  # one real build, after
    constant = _module(final, "Constant")
    shapes = {n.name: n.shape for n in constant.nodes}
    assert shapes == {"x": [1, 1 << 20], "lin": [1, 3], "output": [1, 3]}
    # ones @ 0.5 + 0: 2 ** 19 in each of the 3 outputs (sum, sum of absolute values)
    assert constant.output_signature == [3.0 * (1 << 19)] * 2
    assert not final.diagnostics


def test_cheap_initialisers_run_in_the_one_build(tmp_path: Path) -> None:
    mark = tmp_path / "initialisers.txt"
    marks_at_first: list[list[str]] = []
    path = tmp_path / f"cheap_{tmp_path.name}.py"
    source = INITIALISED.format(mark=str(mark), width=4)
    path.write_text(source, encoding="utf-8")
    final = analyze_source(str(path), source, Settings(project=ProjectLayout(root=str(tmp_path))),
                           lambda report: marks_at_first.append(mark.read_text().split()))

    assert marks_at_first == [["Linear", "Constant"]]  # before the first diagnostics
    assert mark.read_text().split() == ["Linear", "Constant"]  # and no second build
    assert _module(final, "Constant").output_signature == [6.0, 6.0]  # 4 * 0.5 in 3 outputs
    assert "real_weights" in final.timings_ms and not final.diagnostics


def test_buffer_values_are_built_as_for_real(tmp_path: Path) -> None:
    sent, final = _staged(tmp_path, "buffers", BUFFERS)
    assert not sent[0].diagnostics and not final.diagnostics
    masked = _module(final, "Masked")
    targets = [n.target for n in masked.nodes]
    assert "operator.mul" in targets  # mask.sum() is 3: the branch taken as for real
    assert masked.code is not None and "[4, 2, 0]" in masked.code.replace("(", "[")
    assert {n.name: n.shape for n in masked.nodes}["output"] == [2, 3]


def test_a_trace_that_reads_parameter_values_gets_the_real_ones(tmp_path: Path) -> None:
    sent, final = _staged(tmp_path, "reads_weights", READS_WEIGHTS)
    assert not sent[0].diagnostics
    module = _module(final, "ReadsWeights")
    assert module.code is not None and "0.25" in module.code
    assert module.output_signature == [1.0, 1.0]  # 4 outputs of (4 * 0.25) * 0.25
    assert not [d for d in final.diagnostics if d.code == "FX014"]


def test_a_buffer_an_initialiser_sets_is_traced_again_with_real_values(tmp_path: Path) -> None:
    sent, final = _staged(tmp_path, "switched", BUFFER_IN_INITIALISER)
    # the build for tracing skipped reset_parameters (on == 0); the real one differs: the
    # complete report traced the real model, whose forward takes the other branch
    assert not sent[0].diagnostics
    assert "relu" in {n.target.rsplit(".", 1)[-1] for n in _module(final, "Switched").nodes}
    assert not final.diagnostics
    assert _module(final, "Switched").status == "traced"


def test_initialisers_are_skipped_on_parameters_only() -> None:
    calls: list[str] = []

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("filled", torch.empty(3).fill_(2.0))
            self.register_buffer("ramp", torch.zeros(3))
            self.ramp.add_(torch.arange(3.0))
            nn.init.normal_(self.filled[:1])  # a buffer: initialised as asked
            self.weight = nn.Parameter(torch.zeros(2))
            self.weight.data.add_(5.0)  # a parameter's memory: skipped
            self.reset_parameters()

        def reset_parameters(self) -> None:
            calls.append("reset")

    torch.manual_seed(0)
    with initialisers_skipped():
        model = Model()
    assert calls == []
    assert model.filled[1:].tolist() == [2.0, 2.0] and model.filled[0] != 2.0
    assert model.ramp.tolist() == [0.0, 1.0, 2.0]
    assert model.weight.tolist() == [0.0, 0.0]
    assert nn.Module.__init__ is not None and Model.reset_parameters.__name__ == "reset_parameters"
    Model()
    assert calls == ["reset"]  # everything is put back after the block
    assert Model().weight.tolist() == [5.0, 5.0]


def _layers(width: int, count: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*(nn.Linear(width, width) for _ in range(count)))


def test_a_budget_runs_cheap_initialisers_and_skips_from_the_first_expensive_one() -> None:
    with initialisers_skipped(Budget()) as skipped:
        small = _layers(8, 50)
    assert skipped() == 0
    assert torch.equal(small[3].weight, _layers(8, 50)[3].weight)  # a real build

    with initialisers_skipped(Budget()) as skipped:
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(4096, 1024), nn.Linear(8, 8))
    assert skipped() == 2  # the big layer's reset_parameters, then the last one's
    assert model[0].bias.abs().max() > 0 and model[2].weight is not None

    with initialisers_skipped(Budget(allowance_s=0.0, share=0.0)) as skipped:
        _layers(8, 2)
    assert skipped() == 2  # no budget: every initialiser skipped


def test_initialisers_inside_a_running_one_run_too() -> None:
    calls: list[str] = []

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.init_weights()

        def init_weights(self) -> None:
            calls.append("init_weights")
            nn.init.constant_(self.lin.weight, 3.0)  # inside: not a call of its own

    with initialisers_skipped(Budget()) as skipped:
        model = Model()
    assert skipped() == 0 and calls == ["init_weights"]
    assert model.lin.weight.tolist() == [[3.0, 3.0], [3.0, 3.0]]
