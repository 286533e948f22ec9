"""fxls's own frames are never the user's code, also where fxls's checkout is the analysed
file's project (its examples/ are checked in place there)."""

from __future__ import annotations

from pathlib import Path

import fxcore.graph
import fxls.analysis.passes.edits
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_fxls_and_fxcore_files_are_not_reportable_inside_fxls_own_project():
    example = REPO / "examples" / "control_flow.py"
    settings = Settings(project=ProjectLayout(root=str(REPO)))
    source = SourceFile.read(str(example), example.read_text(), settings)
    assert source.is_reportable(str(example))
    assert source.is_reportable(str(REPO / "examples" / "rewrites.py"))
    assert not source.is_reportable(str(Path(fxls.analysis.passes.edits.__file__).resolve()))
    assert not source.is_reportable(str(Path(fxcore.graph.__file__).resolve()))
