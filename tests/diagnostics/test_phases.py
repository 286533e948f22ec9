"""The job sends tracing's diagnostics ahead of the complete report, which adds FX014 and
FX020 (real worker, real job)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from fxls.analysis_runs.request import ANALYZE_TARGET, WARM_IMPORTS, WARM_UP, AnalysisRequest
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import source_text
from fxls.report import FileReport, check_report
from fxls.worker.client import WorkerClient

SOURCE = '''import torch
from torch import nn


# fxls: args (torch.randn(2, 4),)
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * self.calls


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)
'''


#: the module's tests that run their job in its one worker (and its event loop)
in_the_module_worker = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker() -> AsyncIterator[WorkerClient]:
    """One warm worker for the module's jobs (each job runs in a fork of its own): a worker
    costs about 2 CPU-seconds, its ``import torch``."""
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, warm_up=WARM_UP)
    await client.start()
    yield client
    await client.close()


async def _analyse(worker: WorkerClient, path: Path, source: str
                   ) -> tuple[Any, list[dict[str, Any]]]:
    """One real job in the warm worker: its result and the partial reports before it."""
    path.write_text(source, encoding="utf-8")
    request = AnalysisRequest(str(path), source,
                              Settings(project=ProjectLayout(root=str(path.parent))))
    early: list[dict[str, Any]] = []
    result = await worker.run(ANALYZE_TARGET, request.params(), timeout=60,
                              on_partial=early.append)
    return result, early


def _decoded(path: Path, source: str, early: list[dict[str, Any]],
             value: Any) -> tuple[list[FileReport], FileReport]:
    """The partial reports and the final one as the runner decodes them: by ``check_report``,
    the final one continuing the last partial one."""
    text = source_text(source)
    partials = [check_report(data, path=str(path), text=text) for data in early]
    sent_ahead = partials[-1].sent_ahead if partials else None
    final = check_report(value, path=str(path), text=text, partial=sent_ahead)
    return [checked.report for checked in partials], final.report


@in_the_module_worker
async def test_diagnostics_arrive_before_the_complete_report(worker: WorkerClient,
                                                             tmp_path: Path) -> None:
    result, early = await _analyse(worker, tmp_path / "model.py", SOURCE)
    assert result.status == "ok", result
    assert len(early) == 1
    (first,), final = _decoded(tmp_path / "model.py", SOURCE, early, result.value)
    # tracing's diagnostics travelled once: the final frame refers to the partial one's
    assert [d["code"] for d in result.value["diagnostics"]] == ["FX014", "FX020"]
    assert result.value["from_partial"] == [[1, 0]]  # FX001, second in the final order

    codes = [(d.code, d.span.key()) for d in final.diagnostics]
    assert sorted(c for c, _ in codes) == ["FX001", "FX014", "FX020"]
    assert [(d.code, d.span.key()) for d in first.diagnostics] == [
        c for c in codes if c[0] not in ("FX014", "FX020")
    ]
    assert [(m.name, m.status) for m in first.modules] == [
        ("Counter", "traced"), ("Gate", "partial"), ("Swish", "traced")
    ]
    assert all(not m.nodes and m.code is None for m in first.modules)

    counter = final.modules[0]
    assert counter.code and counter.output_signature
    linear = next(n for n in counter.nodes if n.op == "call_module")
    assert linear.shape == [2, 4] and linear.backward == "AddmmBackward0"
    timings = result.value["timings_ms"]
    assert 0 < timings["diagnostics"] <= timings["total"]


def test_warm_up_stops_after_tracing_when_a_job_is_waiting(monkeypatch) -> None:
    import fxls.analysis.job as job
    import fxls.analysis.pipeline.observing as observing

    def second_phase(*_: object) -> None:
        raise AssertionError("the warm-up went on after its job arrived")

    traced: list[FileReport] = []
    real_stop = job._stop_if_job_waiting
    monkeypatch.setattr(job, "job_waiting", lambda: True)
    monkeypatch.setattr(job, "_stop_if_job_waiting",
                        lambda report: (traced.append(report), real_stop(report)))
    monkeypatch.setattr(observing, "observe_class", second_phase)
    job.warm_up()
    assert [m.name for m in traced[0].modules] == ["Block", "WarmUpNet", "Gate"]
    assert [d.code for d in traced[0].diagnostics] == ["FX001"]


@in_the_module_worker
async def test_a_file_with_passes_sends_the_models_report_before_its_passes(
        worker: WorkerClient, tmp_path: Path) -> None:
    """Three stages: tracing's diagnostics, the models' complete report (shapes, FX014)
    before the file's FX passes run, then the passes' own diagnostics."""
    from tests.passes.samples import PASSES

    result, early = await _analyse(worker, tmp_path / "passes.py", PASSES)
    assert result.status == "ok", result
    assert len(early) == 2
    (tracing, models), final = _decoded(tmp_path / "passes.py", PASSES, early, result.value)
    assert not tracing.modules[0].nodes
    net = models.modules[0]
    assert net.name == "Net" and net.nodes and all(n.shape for n in net.nodes if n.op != "output")
    assert not models.passes and "FX005" not in [d.code for d in models.diagnostics]
    assert "passes" not in models.timings_ms
    assert [p.name for p in final.passes] == ["negate_after_relu", "relu_to_gelu"]
    assert "FX005" in [d.code for d in final.diagnostics]
    timings = result.value["timings_ms"]
    assert timings["models"] <= timings["total"] and timings["passes"] > 0


RAISING_INITIALISER = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        raise RuntimeError("no initialiser")

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return self.lin(x)
'''


@in_the_module_worker
async def test_an_initialiser_that_raises_leaves_tracing_diagnostics_in_the_first_frame(
        worker: WorkerClient, tmp_path: Path) -> None:
    """Tracing builds models without their initialisers; the complete report builds them
    for real and reports the failure as a construction failure."""
    result, early = await _analyse(worker, tmp_path / "model.py", RAISING_INITIALISER)
    assert result.status == "ok", result
    (first, *_), final = _decoded(tmp_path / "model.py", RAISING_INITIALISER, early,
                                  result.value)
    assert [(d.code, d.span.line, d.span.col, d.span.end_col) for d in first.diagnostics] == [
        ("FX001", 15, 11, 22)]
    assert [(d.code, d.span.line) for d in final.diagnostics] == [("FX004", 12), ("FX001", 15)]
