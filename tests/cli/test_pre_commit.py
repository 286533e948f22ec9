"""The pre-commit hook (``.pre-commit-hooks.yaml``): one hook ``fxls`` whose entry, given
the staged files as pre-commit passes them, runs ``fxls check`` on them."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / ".pre-commit-hooks.yaml"


def _parse_hooks(text: str) -> list[dict[str, Any]]:
    """The hook list, with PyYAML when it is installed; else read structurally (the file is
    a flat list of mappings whose values are scalars or ``[a, b]`` flow lists)."""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        return yaml.safe_load(text)
    hooks: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = re.fullmatch(r"(- |  )(\w+): (.*)", line)
        assert item is not None, f"unexpected line in {HOOKS.name}: {line!r}"
        start, key, raw = item.groups()
        if start == "- ":
            hooks.append({})
        assert hooks, "a key before the first hook"
        hooks[-1][key] = _scalar(raw.strip())
    return hooks


def _scalar(raw: str) -> Any:
    if raw.startswith("[") and raw.endswith("]"):
        return [_scalar(part.strip()) for part in raw[1:-1].split(",") if part.strip()]
    if raw in ("true", "false"):
        return raw == "true"
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    return raw


def _hook() -> dict[str, Any]:
    (hook,) = _parse_hooks(HOOKS.read_text(encoding="utf-8"))
    return hook


def test_the_hook_is_defined_like_other_python_linters() -> None:
    hook = _hook()
    assert hook["id"] == "fxls" and hook["name"] == "fxls"
    assert hook["entry"] == "fxls check"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "jupyter"]  # notebooks too, as ruff's hook
    # fxls spreads the files over its own jobs; pre-commit must pass them all to one run
    assert hook["require_serial"] is True


def test_the_entry_runs_on_files_as_pre_commit_passes_them(tmp_path: Path) -> None:
    hook = _hook()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "gate.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
        "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n"
        "        return -x\n",
        encoding="utf-8",
    )
    (tmp_path / "models" / "clean.py").write_text(
        "from torch import nn\n\n\nclass Clean(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
        "\n    def forward(self, x):\n        return self.fc(x)\n",
        encoding="utf-8",
    )
    # pre-commit runs `entry args... files...` from the repository root, files relative
    program, *rest = shlex.split(hook["entry"])
    installed = Path(sys.executable).parent / program
    command = [str(installed)] if installed.exists() else [sys.executable, "-m", "fxls"]
    command += [*rest, *hook.get("args", []), "models/gate.py", "models/clean.py"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=tmp_path,
                          env=env)
    assert done.returncode == 1, done.stderr  # an FX001 error fails the commit
    assert done.stdout.startswith("models/gate.py:7:12: FX001 ")

    clean = subprocess.run([*command[:-2], "models/clean.py"], capture_output=True, text=True,
                           timeout=240, cwd=tmp_path, env=env)
    assert clean.returncode == 0 and clean.stdout == "", clean.stderr
