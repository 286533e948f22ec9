"""Faults in user code, run by the real worker through `fxls check`: each file gets its
diagnostic at the line that was running, and the files after it are still analysed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAD = "import torch\nfrom torch import nn\n\n"

FILES = {
    "a_loop_import.py": HEAD + "while True:\n    pass\n",
    "b_loop_forward.py": HEAD + "class M(nn.Module):\n    def forward(self, x):\n"
    "        while True:\n            pass\n",
    "b_loop_eager.py": HEAD + "class Gate(nn.Module):\n    def forward(self, x):\n"
    "        if x.sum() > 0:\n            x = x * 2\n        return x\n\n\n"
    "class EagerHang(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.lin = nn.Linear(2, 2)\n\n    def forward(self, x):\n"
    "        while isinstance(x, torch.Tensor):  # a tensor in the eager run, not in the trace\n"
    "            pass\n        return self.lin(x)\n",
    "c_segfault.py": HEAD + "import ctypes\nctypes.string_at(0)\n",
    "d_exit.py": HEAD + "import os\nos._exit(3)\n",
    "e_memory.py": HEAD + "blob = bytearray(3 * 1024**3)\n",
    "f_flood.py": HEAD + "for i in range(20000):\n    print('flood' * 100)\n",
    "g_recursion.py": HEAD + "def f(n):\n    return f(n + 1)\n\n\nclass M(nn.Module):\n"
    "    def forward(self, x):\n        return f(0)\n",
    "z_ok.py": HEAD + "class Ok(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.lin = nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.lin(x)\n",
}


def test_each_fault_gives_its_diagnostic_and_the_next_file_works(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.fxls]\ntimeout = 6\nmemory_limit_mb = 2048\n", encoding="utf-8")
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    # four jobs at a time: the three hangs run out their timeouts side by side (6 s, not a
    # pair and then the third: 12 s), the other files share the cores with them meanwhile
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", "--jobs", "4",
               str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert "floodflood" not in done.stdout  # user output never reaches fxls's own stdout
    files = {Path(f["path"]).name: f for f in json.loads(done.stdout)["files"]}

    def first(name: str) -> tuple[str, int, str]:
        diagnostic = files[name]["diagnostics"][0]
        return diagnostic["code"], diagnostic["range"]["start"]["line"], diagnostic["message"]

    # a hang is reported at the loop line that was running: `while True:` or its `pass`
    assert first("a_loop_import.py")[0] == "FX102" and first("a_loop_import.py")[1] in (3, 4)
    assert "timed out" in first("a_loop_import.py")[2]
    assert first("b_loop_forward.py")[0] == "FX102" and first("b_loop_forward.py")[1] in (5, 6)
    # a hang after tracing keeps what tracing found
    found = files["b_loop_eager.py"]["diagnostics"]
    eager = [(d["code"], d["range"]["start"]["line"]) for d in found]
    assert eager[0] == ("FX001", 5) and eager[1][0] == "FX102" and eager[1][1] in (16, 17)
    assert [m["status"] for m in files["b_loop_eager.py"]["modules"]] == ["partial", "traced"]
    assert first("c_segfault.py")[:2] == ("FX102", 4)
    assert "SIGSEGV" in first("c_segfault.py")[2]
    assert first("d_exit.py")[:2] == ("FX100", 4) and "os._exit(3)" in first("d_exit.py")[2]
    assert first("e_memory.py")[:2] == ("FX100", 3) and "MemoryError" in first("e_memory.py")[2]
    assert files["f_flood.py"]["diagnostics"] == []
    assert first("g_recursion.py")[0] == "FX004" and "RecursionError" in first("g_recursion.py")[2]
    assert files["z_ok.py"] == {
        "path": str(tmp_path / "z_ok.py"),
        "modules": [{"name": "Ok", "status": "traced", "nodes": 3, "via": None, "entry": None}],
        "diagnostics": [],
    }
