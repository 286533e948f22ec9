"""A job whose code ignores every signal it can (SIGTERM, SIGINT, SIGUSR1: the one that asks
for its stack, SIGALRM) and then sleeps still gets its FX102 timeout at the sleeping line,
through `fxls check`, in each sandbox mode: the job's watchdog thread samples where the main
thread is without any signal (``fxls.worker.where``).

The modes are chosen by an independent probe of the kernel (``unshare``), not by the code
under test."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.security.sandbox_modes import EACH_MODE, check_in_mode

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux jobs")

IGNORE = ("for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGALRM):\n"
          "    signal.signal(s, signal.SIG_IGN)\n")
HEAD = "import signal\nimport time\n\nimport torch\nimport torch.fx as fx\nfrom torch import nn\n\n"
NET = '''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''
FILES = {
    "at_import.py": HEAD + IGNORE + "time.sleep(1000)  # sleeps here\n" + NET,
    "in_forward.py": HEAD + NET.replace(
        "        return torch.relu", "".join(f"        {line}\n" for line in IGNORE.splitlines())
        + "        time.sleep(1000)  # sleeps here\n        return torch.relu"),
    "in_a_pass.py": HEAD + NET + '''

def slow_pass(gm: fx.GraphModule) -> fx.GraphModule:
''' + "".join(f"    {line}\n" for line in IGNORE.splitlines())
    + "    time.sleep(1000)  # sleeps here\n    return gm\n",
}


def sleep_line(name: str) -> int:
    """The 0-based line of the sleep in ``FILES[name]``."""
    (line,) = [n for n, text in enumerate(FILES[name].splitlines()) if "# sleeps here" in text]
    return line


@pytest.fixture(scope="module", params=EACH_MODE)
def reports(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp_path = tmp_path_factory.mktemp(request.param)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return check_in_mode(tmp_path, request.param, "--timeout", "4", "--jobs", "3",
                         "--no-progress", timeout=120)


@pytest.mark.parametrize("name", list(FILES))
def test_a_job_ignoring_signals_times_out_at_its_sleeping_line(
        reports: dict[str, dict[str, Any]], name: str) -> None:
    timeouts = [(d["range"]["start"]["line"], d["message"])
                for d in reports[name]["diagnostics"] if d["code"] == "FX102"]
    assert len(timeouts) == 1, reports[name]["diagnostics"]
    ((line, message),) = timeouts
    assert line == sleep_line(name), message
    assert f"timed out after 4 s while running line {sleep_line(name) + 1}" in message
