"""The worker jobs: analyse one file and return its report as plain data; warm up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fxls.analysis.network import refuse_network
from fxls.analysis.pipeline import analyze_source
from fxls.report import FileReport
from fxls.settings import Settings
from fxls.worker.child import job_waiting, send_partial

#: a small model that goes through every step of the analysis (never a user's file)
WARM_UP_MODEL = Path(__file__).with_name("_fxls_warm_up_model.py")
#: the path it is analysed under: outside fxls (whose frames source spans skip), never read
_WARM_UP_PATH = "/fxls-warm-up/_fxls_warm_up_model.py"


def analyze(params: dict[str, Any]) -> dict[str, Any]:
    settings = Settings.from_dict(params.get("settings") or {})
    if not settings.allow_network:
        refuse_network()  # this process is the job's own fork: nothing else is affected
    report = analyze_source(params["path"], params["source"], settings, _send_diagnostics)
    return report.to_dict()


def _send_diagnostics(report: FileReport) -> None:
    send_partial(report.to_dict())


class _JobArrived(Exception):
    pass


def warm_up() -> None:
    """Analyse the bundled model once: run in each idle job process of the worker before its
    job arrives, so the job finds the code paths, caches and pages it needs already touched.
    A job that arrives meanwhile ends the warm-up after tracing (its one safe point)."""
    source = WARM_UP_MODEL.read_text(encoding="utf-8")
    settings = Settings(root=str(Path(_WARM_UP_PATH).parent))
    try:
        analyze_source(_WARM_UP_PATH, source, settings, _stop_if_job_waiting).to_dict()
    except _JobArrived:
        pass


def _stop_if_job_waiting(report: FileReport) -> None:
    report.to_dict()  # as a job does with it (``_send_diagnostics``)
    if job_waiting():
        raise _JobArrived
