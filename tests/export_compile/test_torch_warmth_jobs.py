"""End to end in a real worker configured as the language server configures it: after an
analysis job exported a model, the job process that takes a later job has torch's caches
warm for it (its export of the same model misses nothing in the fake-tensor cache), and
before any such job it had them cold."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fxls.analysis_runs.request import (
    LEARN_IMPORTS,
    WARM_FROM,
    WARM_IMPORTS,
    WARM_UP,
    AnalysisRequest,
)
from fxls.analysis_runs.runs import run_analysis
from fxls.project.setting_groups import JobLimits, ProjectLayout, TracerTargets
from fxls.project.settings import Settings
from fxls.worker.client import WorkerClient
from tests.export_compile.warmth_jobs import SOURCE

PROBE = "tests.export_compile.warmth_jobs:export_misses"
GIVE_UP_S = 120.0


async def test_after_an_export_job_the_next_job_process_misses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "small.py"
    path.write_text(SOURCE)
    worker = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS, warm_up=WARM_UP,
                          warm_from=WARM_FROM, learn_imports=LEARN_IMPORTS, sandbox=True,
                          roots=(str(tmp_path),))
    await worker.start()
    try:
        cold = await worker.run(PROBE, {}, timeout=60)
        assert cold.status == "ok" and cold.value["misses"] > 0, cold
        settings = Settings(project=ProjectLayout(root=str(tmp_path)),
                            tracers=TracerTargets(targets=("export",)),
                            limits=JobLimits(timeout=120.0))
        report = await run_analysis(worker, AnalysisRequest(str(path), SOURCE, settings))
        assert report is not None and report.modules[0].targets == {"export": "exported"}
        deadline = asyncio.get_running_loop().time() + GIVE_UP_S
        while True:  # a job that arrives before the replay ended stops it: ask again
            await asyncio.sleep(1.0)
            warm = await worker.run(PROBE, {}, timeout=60)
            assert warm.status == "ok", warm
            if warm.value["misses"] == 0:
                break
            assert asyncio.get_running_loop().time() < deadline, warm.value
        assert warm.value["hits"] > 0
    finally:
        await worker.close()
