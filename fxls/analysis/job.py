"""The worker jobs: analyse one file and return its report as plain data; warm up.

Both go through the worker's job API (``fxls.worker.api``) only.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

from fxls.analysis.library_names import module_named_by_file
from fxls.analysis.network import refuse_network
from fxls.analysis.pipeline import analyze_source
from fxls.project.files_read import FilesRead
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import FileReport
from fxls.worker.api import catch_process_exits, job_policy, job_waiting, send_partial

#: a small model that goes through every step of the analysis (never a user's file)
WARM_UP_MODEL = Path(__file__).with_name("_fxls_warm_up_model.py")
#: the path it is analysed under: outside fxls (whose frames source spans skip), never read
_WARM_UP_PATH = "/fxls-warm-up/_fxls_warm_up_model.py"
_WARM_UP_MODULES = "_fxls_warm_up"


def analyze(params: dict[str, Any]) -> dict[str, Any]:
    settings = Settings.from_dict(params.get("settings") or {})
    catch_process_exits()  # the user's os._exit() is reported at its line
    if not job_policy().network:
        refuse_network()  # this process is the job's own fork: nothing else is affected
    sent: list[dict[str, Any]] = []

    def send_diagnostics(report: FileReport) -> None:
        partial = report.to_dict()  # now: the analysis goes on changing the report's objects
        if send_partial(partial):
            sent.append(partial)

    files = FilesRead(params["path"], settings.project.root
                      or str(Path(params["path"]).parent))
    files.watch()
    report = analyze_source(params["path"], params["source"], settings, send_diagnostics)
    report.reads = files.digests()
    # the caller has tracing's diagnostics already: only what they lack travels again
    return report.to_dict(partial=sent[-1] if sent else None)


class _JobArrived(Exception):
    pass


def warm_up() -> None:
    """Analyse the bundled model once (the worker's warm-up, see ``fxls.worker.api``), so
    jobs find the code paths, caches and pages they need already touched. A job that arrives
    meanwhile ends it after tracing (its one safe point). Leaves torch's random generator and
    the modules as they were (Python's ``random`` is reseeded in every fork anyway)."""
    source = WARM_UP_MODEL.read_text(encoding="utf-8")
    settings = Settings(project=ProjectLayout(root=str(Path(_WARM_UP_PATH).parent)))
    rng = torch.random.get_rng_state()
    try:
        analyze_source(_WARM_UP_PATH, source, settings, _stop_if_job_waiting).to_dict()
    except _JobArrived:
        pass
    finally:
        torch.random.set_rng_state(rng)
        for name in [n for n in sys.modules if n.startswith(_WARM_UP_MODULES)]:
            del sys.modules[name]
    # in an idle job process, touch every module now (the pages a fork copies on first touch)
    # rather than when a problem inside a library is named
    module_named_by_file(_WARM_UP_PATH)


def _stop_if_job_waiting(report: FileReport) -> None:
    report.to_dict()  # as a job does with it (``send_diagnostics``)
    if job_waiting():
        raise _JobArrived
