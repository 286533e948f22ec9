"""A file of an installed package whose package fails to import, as optimum's
``optimum/fx/parallelization`` does on Python 3.11 (a dataclass field with a ``slice``
default): the file is named as Python names it (``optimum`` is a namespace package, found
in a site folder), and each problem is said once, at the line of the file that meets it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

INIT = "from .core import Config\n"
CORE = '''import dataclasses


@dataclasses.dataclass
class Config:
    index: slice = slice(None)
'''
PASSES = '''import torch

from .core import Config


def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2
'''


def _site(tmp_path: Path) -> Path:
    """A site folder holding the namespace package ``nsopt`` (no ``__init__.py``) and its
    regular package ``nsopt.par``."""
    package = tmp_path / "site" / "nsopt" / "par"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(INIT, encoding="utf-8")
    (package / "core.py").write_text(CORE, encoding="utf-8")
    (package / "passes.py").write_text(PASSES, encoding="utf-8")
    return tmp_path / "site"


def _check(site: Path, *paths: Path) -> dict[str, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", *map(str, paths)],
        capture_output=True, text=True, timeout=600, cwd=site.parent,
        env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}


def _said(report: dict) -> list[tuple[str, int, str]]:
    return [(d["code"], d["range"]["start"]["line"] + 1, d["message"])
            for d in report["diagnostics"]]


def test_each_file_says_the_failure_once_at_its_own_line(tmp_path: Path) -> None:
    site = _site(tmp_path)
    package = site / "nsopt" / "par"
    found = _check(site, package / "core.py", package / "passes.py", package / "__init__.py")
    raised = "ValueError: mutable default <class 'slice'> for field index is not allowed"
    # core.py raised where its dataclass is made; the package then could not take Config
    # from it: that is the same problem
    ((code, line, message),) = _said(found["core.py"])
    assert (code, line) == ("FX100", 4) and raised in message, found["core.py"]
    # passes.py meets it where it imports core (and where the package's __init__ does: said
    # at its own line only)
    ((code, line, message),) = _said(found["passes.py"])
    assert (code, line) == ("FX100", 3) and raised in message, found["passes.py"]
    ((code, line, message),) = _said(found["__init__.py"])
    assert (code, line) == ("FX100", 1) and raised in message, found["__init__.py"]


def test_a_namespace_package_in_a_site_folder_names_the_module(tmp_path: Path) -> None:
    """Without its own line to say it (a file that imports nothing of the package), the
    package's failure is said at the file's first line, naming the package as Python does:
    ``nsopt.par``, not ``par`` imported from the namespace folder."""
    site = _site(tmp_path)
    lone = site / "nsopt" / "par" / "lone.py"
    lone.write_text("import torch\n\nx = torch.ones(2)\n", encoding="utf-8")
    ((code, line, message),) = _said(_check(site, lone)["lone.py"])
    assert (code, line) == ("FX100", 1)
    assert message.startswith("importing the package `nsopt.par` raised: ValueError"), message
