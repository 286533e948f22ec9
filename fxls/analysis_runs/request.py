"""What the client asks of an analysis job: the job's targets in the worker (what it runs,
what the warm worker imports and learns) and one file's request."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxls.project.notebooks import NotebookCells
from fxls.project.settings import Settings

ANALYZE_TARGET = "fxls.analysis.job:analyze"
#: imported once by the warm worker so that each job starts with them loaded
WARM_IMPORTS = ("torch", "fxcore", "fxls.analysis.job")
#: run by each pre-forked job process while it waits for its job (analyses a bundled model);
#: for the editor, whose saves are apart, so the warm-up is done when a save comes
WARM_UP = "fxls.analysis.job:warm_up"
#: what fills torch's caches in a waiting job process from the export and compile runs of
#: the last jobs (``fxls.analysis.torch_warmth``)
WARM_FROM = "fxls.analysis.torch_warmth.replay:warm_from"
#: packages whose modules a job imported are imported by the warm worker for later jobs:
#: torch's costly ones (``torch._dynamo``, which torchvision and timm pull in, costs seconds
#: per job); never more (a job can forge the list: ``fxls.worker.worker_imports``)
LEARN_IMPORTS = ("torch._dynamo", "torch._functorch", "torch.fx.experimental")


@dataclass(slots=True)
class AnalysisRequest:
    path: str  # as the user gave it (reported back unchanged)
    source: str
    settings: Settings
    #: a notebook's: where its code cells are in ``source`` (the job never sees it)
    cells: NotebookCells | None = None

    def params(self) -> dict[str, Any]:
        return {
            "path": str(Path(self.path).resolve()),
            "source": self.source,
            "settings": self.settings.to_dict(),
        }

    def sources(self) -> tuple[str, ...]:
        """The job's own code: the document and its project root."""
        root = self.settings.project.root
        return (str(Path(self.path).resolve()), *((str(Path(root).resolve()),) if root else ()))
