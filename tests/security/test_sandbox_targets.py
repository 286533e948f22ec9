"""The export and compile targets in the job sandbox (issue 33): ``fxls check --target
export,compile`` runs the real ``torch.export`` (and ``draft_export``, which writes its logs
to the temporary folder) and dynamo on the user's modules, and nothing is written outside the
jobs' temporary folders: not torch's caches (``/tmp/torchinductor_<user>``, ``~/.cache``,
``~/.triton``), not the workspace, not ``HOME``. A write the model's forward tries only
while it is exported or compiled is refused and reported at its line (FX103).

Each fxls process here gets a ``HOME`` and a ``TMPDIR`` of the test's own, so torch's
default folders are folders the test can list: ``HOME`` stays empty, ``TMPDIR`` holds nothing
once the check has ended. Under ``strace`` (where it can trace), every write to the file
system made by any of fxls's processes lies in a job's folder (or is a temporary file the
process removed at once)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.sandbox_modes import EACH_MODE, REPO, check_in_mode

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
MODELS = REPO / "tests" / "export_compile" / "models.py"

ESCAPES = '''\
import torch
from torch import nn


def attempt(action):
    try:
        action()
    except OSError:
        pass


class Escapes(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def forward(self, x):
        y = x * 2
        if torch.compiler.is_compiling():  # only while exported or compiled
            attempt(lambda: open("{home}/written.txt", "w"))
        if y.sum() > 0:
            y = y + 1
        return y
'''
#: a second file: the worker learns ``torch._dynamo`` after the first job that used it
BREAKS = '''\
import torch
from torch import nn


class Breaks(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def forward(self, x):
        x = x + 1
        print("compiled in pieces")
        return x.relu()
'''


def _folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace, home, temp = tmp_path / "workspace", tmp_path / "home", tmp_path / "tmp"
    for folder in (workspace, home, temp):
        folder.mkdir()
    return workspace, home, temp


def _range_of(source: str, fragment: str) -> dict[str, dict[str, int]]:
    rows = source.splitlines()
    line = next(number for number, row in enumerate(rows) if fragment in row)
    start = rows[line].index(fragment)
    return {"start": {"line": line, "character": start},
            "end": {"line": line, "character": start + len(fragment)}}


@pytest.mark.parametrize("mode", EACH_MODE)
def test_export_and_compile_write_nothing_outside_the_jobs_folders(
        mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, home, temp = _folders(tmp_path)
    escapes = ESCAPES.format(home=home)
    (workspace / "escapes.py").write_text(escapes, encoding="utf-8")
    (workspace / "breaks.py").write_text(BREAKS, encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(temp))
    reports = check_in_mode(workspace, mode, "--target", "export,compile", "--jobs", "1",
                            timeout=600)
    found = {(d["code"], d.get("target"))
             for report in reports.values() for d in report["diagnostics"]}
    assert {("FX201", "export"), ("FX301", "compile")} <= found  # both tiers ran
    refused = [d for d in reports["escapes.py"]["diagnostics"] if d["code"] == "FX103"]
    assert [d["range"] for d in refused] == [
        _range_of(escapes, f'open("{home}/written.txt", "w")')]
    assert sorted(p.name for p in workspace.iterdir()) == ["breaks.py", "escapes.py"]
    assert list(home.iterdir()) == []
    assert list(temp.iterdir()) == []  # the jobs' folders removed, no torch cache left


def _strace_works() -> bool:
    strace = shutil.which("strace")
    return strace is not None and subprocess.run(
        [strace, "-f", "-qq", "-o", os.devnull, "true"], capture_output=True).returncode == 0


#: system calls that write to the file system, each line as ``strace -y`` prints it
WRITES = ("openat", "open", "creat", "mkdir", "mkdirat", "rename", "renameat", "renameat2",
          "link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat", "truncate",
          "chmod", "fchmodat", "chown", "fchownat", "utimensat", "setxattr", "removexattr")
_CALL = re.compile(r"^\d+\s+(?:<\.\.\. )?(\w+)\((.*)$")
_PATH = re.compile(r'(?:(\d+)<([^>]*)>, )?"([^"]*)"')
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")


def _written_paths(trace: str) -> list[tuple[str, str]]:
    """(system call, absolute path) of each write in ``trace``, tried or done."""
    written = []
    for line in trace.splitlines():
        call = _CALL.match(line)
        if call is None or call.group(1) not in WRITES:
            continue
        name, arguments = call.groups()
        if name in ("open", "openat") and not any(flag in arguments for flag in _WRITE_FLAGS):
            continue
        for folder, path in ((m.group(2), m.group(3)) for m in _PATH.finditer(arguments)):
            written.append((name, path if path.startswith("/") or not folder
                            else os.path.join(folder, path)))
    return written


def _own_bytecode(path: str) -> bool:
    """Python's cache of fxls's or the interpreter's own modules (a module edited in this
    checkout is compiled again by the first process that imports it; jobs write none)."""
    inside = (str(REPO), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix))
    return (os.path.basename(os.path.dirname(path)) == "__pycache__"
            and os.path.realpath(path).startswith(inside))


@pytest.mark.skipif(not _strace_works(), reason="strace cannot trace here")
def test_every_write_of_an_export_and_compile_check_is_in_a_jobs_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, home, temp = _folders(tmp_path)
    shutil.copy(MODELS, workspace / "models.py")  # every failure kind, draft_export's too
    (workspace / "breaks.py").write_text(BREAKS, encoding="utf-8")
    trace = tmp_path / "trace.txt"
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(temp), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["strace", "-f", "-qq", "-y", "-o", str(trace), "-e", f"trace={','.join(WRITES)}",
         sys.executable, "-m", "fxls", "check", "--format", "json", "--target",
         "export,compile", "--jobs", "1", "--timeout", "600", "."],
        capture_output=True, text=True, timeout=900, cwd=workspace, env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    assert '"FX301"' in done.stdout and '"FX201"' in done.stdout
    written = _written_paths(trace.read_text(encoding="utf-8"))
    removed = {path for call, path in written if call in ("unlink", "unlinkat")}
    jobs = re.compile(re.escape(f"{temp}/") + r"fxls-jobs-[^/]+(/|$)")
    outside = [(call, path) for call, path in written
               if not jobs.match(path)  # the jobs' folders, fxls's own
               and not _own_bytecode(path)
               and path not in (os.devnull, "/proc/self/uid_map", "/proc/self/gid_map",
                                "/proc/self/setgroups")
               and not (os.path.dirname(path) == str(temp) and path in removed)]
    assert outside == []
    assert written and list(home.iterdir()) == [] and list(temp.iterdir()) == []
