"""What the result cache cannot see in a file's text, the analysis tells it: the workspace
files the job read (a module imported by a computed name, a data file the model opens) are
kept with the entry by their digests, and a change to one of them is a miss (real analyses:
the worker records them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.result_cache.checks import cache_on, check

MODEL = """\
import importlib
import json
from pathlib import Path

from torch import nn

CONFIG = json.loads((Path(__file__).parent / "config.json").read_text())
helpers = importlib.import_module("help" + "ers")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if CONFIG["check"]:
            if h.sum() > 0:
                h = h * 2
        return helpers.act(h)
"""
HELPERS = "import torch\n\n\ndef act(h):\n    return torch.relu(h)\n"
PRINTS = "import torch\n\n\ndef act(h):\n    print(h)\n    return torch.relu(h)\n"


def _codes(text: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in text.splitlines() if ": FX" in line]


def test_a_data_file_or_a_module_imported_by_name_changed_is_a_miss(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    (project / "model.py").write_text(MODEL, encoding="utf-8")
    (project / "config.json").write_text('{"check": false}', encoding="utf-8")
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    cache_on(tmp_path / "cache", monkeypatch)
    monkeypatch.chdir(project)
    first = check("model.py")
    assert _codes(first.stdout) == [] and "from the cache" not in first.stderr
    assert "1 of 1 files from the cache" in check("model.py").stderr
    # the model's data file: FX001 appears, as a fresh analysis says
    (project / "config.json").write_text('{"check": true}', encoding="utf-8")
    changed = check("model.py")
    assert "from the cache" not in changed.stderr and _codes(changed.stdout) == ["FX001"]
    # a module it imports by a computed name
    (project / "helpers.py").write_text(PRINTS, encoding="utf-8")
    changed = check("model.py")
    assert "from the cache" not in changed.stderr
    assert _codes(changed.stdout) == ["FX001", "FX013"]
    again = check("model.py")
    assert "1 of 1 files from the cache" in again.stderr and again.stdout == changed.stdout


def test_a_read_path_from_a_report_never_opens_a_fifo_or_a_relative_path(tmp_path: Path) -> None:
    """The paths come from the job's report (the user's code ran there): checking them at
    lookup opens no FIFO (it would block), no device, and nothing relative."""
    import os

    from fxls.project.files_read import file_digest

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert file_digest(str(fifo)) is None
    assert file_digest("relative.json") is None
    data = tmp_path / "data.json"
    data.write_text("{}", encoding="utf-8")
    assert file_digest(str(data)) == (
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a")
