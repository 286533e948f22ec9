"""Every way a job can fail or go over its limits, through `fxls check`, in each sandbox mode
(job processes cloned into their namespaces, made behind a relay, no namespaces): each file
gets its diagnostic at the user's line that caused it, with words that name the cause (or
the setting), and what the analysis found besides is not lost. A job whose code ignores
every signal it can (SIGTERM, SIGINT, SIGUSR1: the one that asks for its stack, SIGALRM) and
then sleeps still gets its FX102 timeout at the sleeping line: the job's watchdog thread
samples where the main thread is without any signal (``fxls.worker.where``). All the files
of a mode are checked by one `fxls check`.

The modes are chosen by an independent probe of the kernel (``unshare``), not by the code
under test."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.security.sandbox_modes import EACH_MODE, check_in_mode

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux jobs")

HEAD = "import os\nimport time\n\nimport torch\nfrom torch import nn\n\n"  # lines 1-6
MODEL = '''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
'''
SETTINGS = """[tool.fxls]
timeout = 8
memory_limit_mb = 1536
max_processes = 8
tmp_limit_mb = 16
"""
FILES = {
    "exit_at_import.py": HEAD + "os._exit(3)\n" + MODEL,
    "exit_in_forward.py": HEAD + MODEL.replace("        return self.fc(x)",
                                               "        os._exit(3)\n        return self.fc(x)"),
    "exit_helper.py": "import os\n\nos._exit(3)\n",
    "exit_in_a_sibling.py": HEAD + "import exit_helper\n" + MODEL,
    "hang_with_sigusr1_blocked.py": HEAD + "import signal\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
    "while True:\n    time.sleep(0.01)\n",
    "json_dumps_broken.py": HEAD + "import json\n\n\ndef boom(*args, **kwargs):\n"
    "    raise RuntimeError('no JSON today')\n\n\njson.dumps = boom\n" + MODEL,
    "modules_cleared.py": HEAD + "import sys\nsys.modules.clear()\n" + MODEL,
    "import_removed.py": HEAD + "import builtins\nbuiltins.__import__ = None\n" + MODEL,
    "numpy.py": "raise ImportError('this numpy refuses to load')\n",
    "imports_numpy.py": HEAD + "import numpy\n" + MODEL,
    "memory_in_forks.py": HEAD + "children = []\nfor _ in range(3):\n"
    "    pid = os.fork()\n    if pid == 0:\n        held = b'x' * (600 * 1024 * 1024)\n"
    "        time.sleep(60)\n        os._exit(0)\n    children.append(pid)\n"
    "for pid in children:\n    os.waitpid(pid, 0)\n" + MODEL,
    "many_processes.py": HEAD + "children = []\nfor _ in range(12):\n"
    "    pid = os.fork()\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    "    children.append(pid)\nfor pid in children:\n    os.waitpid(pid, 0)\n" + MODEL,
    "fills_its_temp_folder.py": HEAD + "import tempfile\n\n"
    "with open(os.path.join(tempfile.gettempdir(), 'big'), 'wb') as big:\n"
    "    for _ in range(200):\n        big.write(b'y' * 1024 * 1024)\n        big.flush()\n"
    "        time.sleep(0.01)\n" + MODEL,
}

#: what waits out its timeout: checked in the project of ``IGNORING_SIGNALS`` (4 s)
HANGS = {"hang_with_sigusr1_blocked.py"}


def line_of(name: str, text: str) -> int:
    """The 0-based line of ``text`` in ``FILES[name]``."""
    for number, line in enumerate(FILES[name].splitlines()):
        if text in line:
            return number
    raise AssertionError(text)


IGNORE = ("for s in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGALRM):\n"
          "    signal.signal(s, signal.SIG_IGN)\n")
SIGNALS_HEAD = ("import signal\nimport time\n\nimport torch\nimport torch.fx as fx\n"
                "from torch import nn\n\n")
NET = '''

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''
#: files that ignore the signals and sleep, in a project of their own whose timeout is 4 s
#: (with the hangs of ``FILES``: no other file waits out its timeout)
IGNORING_SIGNALS = {
    "at_import.py": SIGNALS_HEAD + IGNORE + "time.sleep(1000)  # sleeps here\n" + NET,
    "in_forward.py": SIGNALS_HEAD + NET.replace(
        "        return torch.relu", "".join(f"        {line}\n" for line in IGNORE.splitlines())
        + "        time.sleep(1000)  # sleeps here\n        return torch.relu"),
    "in_a_pass.py": SIGNALS_HEAD + NET + '''

def slow_pass(gm: fx.GraphModule) -> fx.GraphModule:
''' + "".join(f"    {line}\n" for line in IGNORE.splitlines())
    + "    time.sleep(1000)  # sleeps here\n    return gm\n",
}


def sleep_line(name: str) -> int:
    """The 0-based line of the sleep in ``IGNORING_SIGNALS[name]``."""
    (line,) = [n for n, text in enumerate(IGNORING_SIGNALS[name].splitlines())
               if "# sleeps here" in text]
    return line


@pytest.fixture(scope="module", params=EACH_MODE)
def reports(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One `fxls check` of all the files per mode, five jobs at a time: the four that wait
    out their timeout (4 s, their project's) wait side by side, not two by two (they sleep:
    no core is taken), and the other files run meanwhile."""
    tmp_path = tmp_path_factory.mktemp(request.param)
    (tmp_path / "pyproject.toml").write_text(SETTINGS, encoding="utf-8")
    signals = tmp_path / "ignoring_signals"
    signals.mkdir()
    (signals / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 4\n", encoding="utf-8")
    for name, text in FILES.items():
        ((signals if name in HANGS else tmp_path) / name).write_text(text, encoding="utf-8")
    for name, text in IGNORING_SIGNALS.items():
        (signals / name).write_text(text, encoding="utf-8")
    return check_in_mode(tmp_path, request.param, "--jobs", "5", timeout=300)


def found(report: dict[str, Any], code: str) -> list[tuple[int, str]]:
    return [(d["range"]["start"]["line"], d["message"]) for d in report["diagnostics"]
            if d["code"] == code]


def traced(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["name"], m["status"]) for m in report["modules"]]


def test_each_failure_at_its_line_with_its_cause(reports: dict[str, dict[str, Any]]) -> None:
    # os._exit at import, in forward, in a module the file imports: at the line that called it
    ((line, message),) = found(reports["exit_at_import.py"], "FX100")
    assert line == line_of("exit_at_import.py", "os._exit(3)") and "os._exit(3)" in message
    assert traced(reports["exit_at_import.py"]) == []  # the file stopped there, as Python does
    ((line, message),) = found(reports["exit_in_forward.py"], "FX004")
    assert line == line_of("exit_in_forward.py", "os._exit(3)") and "os._exit(3)" in message
    ((line, message),) = found(reports["exit_in_a_sibling.py"], "FX100")
    assert line == line_of("exit_in_a_sibling.py", "import exit_helper")
    assert "os._exit(3)" in message
    # a hang whose main thread blocks the signal that asks for its stack
    ((line, message),) = found(reports["hang_with_sigusr1_blocked.py"], "FX102")
    assert line in (line_of("hang_with_sigusr1_blocked.py", "while True"),
                    line_of("hang_with_sigusr1_blocked.py", "time.sleep(0.01)"))
    assert "timed out after 4 s while running line" in message
    # fxls's own code does not use what the file broke: the report is whole
    assert reports["json_dumps_broken.py"]["diagnostics"] == []
    assert traced(reports["json_dumps_broken.py"]) == [("Net", "traced")]
    for name, line_text, cause in (("modules_cleared.py", "sys.modules.clear()", "`sys.modules`"),
                                   ("import_removed.py", "builtins.__import__ = None",
                                    "`builtins.__import__`")):
        ((line, message),) = found(reports[name], "FX100")
        assert line == line_of(name, line_text) and cause in message, (name, message)
        assert traced(reports[name]) == [("Net", "traced")], name
    ((line, message),) = found(reports["imports_numpy.py"], "FX100")
    assert line == line_of("imports_numpy.py", "import numpy")
    assert "the import of `numpy` failed: ImportError: this numpy refuses to load" in message
    assert traced(reports["imports_numpy.py"]) == [("Net", "traced")]


def test_each_limit_at_its_line_naming_its_setting(reports: dict[str, dict[str, Any]]) -> None:
    ((line, message),) = found(reports["memory_in_forks.py"], "FX102")
    assert line in (line_of("memory_in_forks.py", "os.waitpid"),
                    line_of("memory_in_forks.py", "for pid in children")), message
    assert "processes used" in message and "`memory_limit_mb` = 1536" in message
    ((line, message),) = found(reports["many_processes.py"], "FX102")
    assert line in (line_of("many_processes.py", "os.fork()"),
                    line_of("many_processes.py", "for _ in range(12)"),
                    line_of("many_processes.py", "children.append"),
                    line_of("many_processes.py", "os.waitpid"),
                    line_of("many_processes.py", "for pid in children"))
    assert "more than 8 processes" in message and "`max_processes` = 8" in message
    # the temporary folder: a tmpfs of its size in the namespaces (the write fails at its
    # line), watched by the worker without them (the job is ended where it was writing)
    report = reports["fills_its_temp_folder.py"]
    ((line, message),) = [*found(report, "FX100"), *found(report, "FX102")]
    loop = range(line_of("fills_its_temp_folder.py", "with open"),
                 line_of("fills_its_temp_folder.py", "time.sleep") + 1)
    assert line in loop, (line, message)
    assert "`tmp_limit_mb`" in message


@pytest.mark.parametrize("name", list(IGNORING_SIGNALS))
def test_a_job_ignoring_signals_times_out_at_its_sleeping_line(
        reports: dict[str, dict[str, Any]], name: str) -> None:
    timeouts = [(d["range"]["start"]["line"], d["message"])
                for d in reports[name]["diagnostics"] if d["code"] == "FX102"]
    assert len(timeouts) == 1, reports[name]["diagnostics"]
    ((line, message),) = timeouts
    assert line == sleep_line(name), message
    assert f"timed out after 4 s while running line {sleep_line(name) + 1}" in message
