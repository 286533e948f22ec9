"""`fxls check` reads files as files: a FIFO, a link to a device, a symbolic-link loop or a
broken link named `*.py` is skipped with a line on stderr, a file over 8 MB is one FX100, and
every other file is still reported (real worker). A hostile repository can commit the links."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

GOOD = ("import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
        "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n"
        "        return -x\n")
#: the FX001 of GOOD: (code, line, character) in LSP positions
GATE = [("FX001", 6, 11)]
#: the old reader took all of /dev/zero: keep a regression from taking the machine
ADDRESS_LIMIT = 3 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))


def _check(folder: Path, *paths: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", *paths]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, cwd=folder,
                          preexec_fn=_limit_memory)
    assert "Traceback" not in done.stderr, done.stderr
    found = {entry["path"]: [(d["code"], d["range"]["start"]["line"],
                              d["range"]["start"]["character"]) for d in entry["diagnostics"]]
             for entry in json.loads(done.stdout)["files"]}
    return done, found


def _good_files(folder: Path) -> None:
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 20\n", encoding="utf-8")
    (folder / "a_good.py").write_text(GOOD, encoding="utf-8")
    (folder / "z_good.py").write_text(GOOD, encoding="utf-8")


#: each scenario's folder, made by its maker: all of them checked by the module's one
#: `fxls check` (``checked``), each test reads its folder's part
def _fifo(folder: Path) -> None:
    os.mkfifo(folder / "b.py")


def _device(device: str) -> Callable[[Path], None]:
    return lambda folder: (folder / "c.py").symlink_to(device)


def _loops(folder: Path) -> None:
    (folder / "l1.py").symlink_to("l2.py")
    (folder / "l2.py").symlink_to("l1.py")
    (folder / "m.py").symlink_to("missing.py")


def _big(folder: Path) -> None:
    (folder / "big.py").write_bytes(b"x = 1\n" + b"#" * (9 << 20) + b"\n")


def _named(folder: Path) -> None:
    os.mkfifo(folder / "b.py")
    (folder / "c.py").symlink_to("/dev/zero")
    (folder / "l1.py").symlink_to("l2.py")
    (folder / "l2.py").symlink_to("l1.py")


WALKED = {"fifo": _fifo, "zero": _device("/dev/zero"), "urandom": _device("/dev/urandom"),
          "loops": _loops, "big": _big}
#: the odd files of ``named/`` named on the command line, and one good file
NAMED = ["named/b.py", "named/c.py", "named/l1.py", "named/a_good.py"]


class Checked(NamedTuple):
    root: Path
    done: subprocess.CompletedProcess[str]
    found: dict[str, list[tuple[str, int, int]]]

    def found_in(self, folder: str) -> dict[str, list[tuple[str, int, int]]]:
        return {path: found for path, found in self.found.items()
                if path.startswith(f"{folder}/")}

    def said_of(self, folder: str) -> list[str]:
        """The lines on stderr about the files of ``folder``, in their order."""
        return [line for line in self.done.stderr.splitlines()
                if line.startswith(f"fxls: {folder}/")]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    root = tmp_path_factory.mktemp("odd_files")
    for name, make in {**WALKED, "named": _named}.items():
        (root / name).mkdir()
        _good_files(root / name)
        make(root / name)
    done, found = _check(root, *WALKED, *NAMED)
    said = Checked(root, done, found)
    # every line on stderr is about one scenario's files
    assert sum(len(said.said_of(name)) for name in [*WALKED, "named"]) == len(
        done.stderr.splitlines()), done.stderr
    return said


def test_a_fifo_is_skipped(checked: Checked):
    assert checked.done.returncode == 1
    assert checked.found_in("fifo") == {"fifo/a_good.py": GATE, "fifo/z_good.py": GATE}
    assert checked.said_of("fifo") == ["fxls: fifo/b.py: skipped: a FIFO, not a regular file"]


@pytest.mark.parametrize(("folder", "device"), [("zero", "/dev/zero"),
                                                ("urandom", "/dev/urandom")])
def test_a_link_to_a_device_is_skipped(checked: Checked, folder: str, device: str):
    assert checked.done.returncode == 1
    assert checked.found_in(folder) == {f"{folder}/a_good.py": GATE,
                                        f"{folder}/z_good.py": GATE}
    assert checked.said_of(folder) == [
        f"fxls: {folder}/c.py: skipped: a character device ({device}), not a regular file"]


def test_a_symbolic_link_loop_is_skipped(checked: Checked):
    assert checked.done.returncode == 1
    assert checked.found_in("loops") == {"loops/a_good.py": GATE, "loops/z_good.py": GATE}
    assert checked.said_of("loops") == [
        "fxls: loops/l1.py: skipped: a symbolic link loop",
        "fxls: loops/l2.py: skipped: a symbolic link loop",
        "fxls: loops/m.py: skipped: a broken symbolic link (to missing.py)",
    ]


def test_a_file_over_the_size_limit_is_one_fx100(checked: Checked):
    assert checked.done.returncode == 1
    assert checked.found_in("big") == {"big/a_good.py": GATE, "big/big.py": [("FX100", 0, 0)],
                                       "big/z_good.py": GATE}
    (entry,) = [f for f in json.loads(checked.done.stdout)["files"]
                if f["path"] == "big/big.py"]
    assert entry["diagnostics"][0]["message"] == (
        "the file is 9.0 MB, over the 8 MB fxls reads: it was not checked")


def test_odd_files_named_on_the_command_line(checked: Checked):
    """Each named odd file is one line on stderr, not a usage error: the others are
    checked and the exit code is theirs."""
    assert checked.done.returncode == 1
    assert checked.found_in("named") == {"named/a_good.py": GATE}
    assert checked.said_of("named") == [
        "fxls: named/b.py: skipped: a FIFO, not a regular file",
        "fxls: named/c.py: skipped: a character device (/dev/zero), not a regular file",
        "fxls: named/l1.py: skipped: a symbolic link loop",
    ]
    only_odd = subprocess.run([sys.executable, "-m", "fxls", "check", "named/b.py"],
                              cwd=checked.root, capture_output=True, text=True, timeout=60)
    assert (only_odd.returncode, only_odd.stdout) == (0, "")
    missing = subprocess.run([sys.executable, "-m", "fxls", "check", "nothing.py"],
                             cwd=checked.root, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no such file or folder: nothing.py" in missing.stderr


#: a model whose report (the analysed code can forge it) points into the odd files
FORGED_SPANS = """import os
import fxls.report
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


def _into_odd_files(self, partial=None):
    return {"path": self.path, "diagnostics": [
        {"code": "FX004", "severity": "error", "message": f"in {name}",
         "span": {"file": os.path.join(HERE, name), "line": 3, "end_line": 3, "col": 0,
                  "end_col": 4}}
        for name in ("b.py", "c.py", "l1.py")]}


fxls.report.FileReport.to_dict = _into_odd_files
"""


@pytest.mark.parametrize("output", ["text", "json", "sarif"])
def test_a_report_pointing_into_odd_files_loses_nothing(tmp_path: Path, output: str):
    """Placing a span reads the file it points into: a FIFO blocked that read, /dev/zero
    never ended it, a link loop was a RuntimeError; now each is placed at its line 1."""
    _good_files(tmp_path)
    os.mkfifo(tmp_path / "b.py")
    (tmp_path / "c.py").symlink_to("/dev/zero")
    (tmp_path / "l1.py").symlink_to("l2.py")
    (tmp_path / "l2.py").symlink_to("l1.py")
    (tmp_path / "forged.py").write_text(FORGED_SPANS, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", output, "."],
                          capture_output=True, text=True, timeout=90, cwd=tmp_path,
                          preexec_fn=_limit_memory)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    for name in ("a_good.py", "z_good.py"):
        assert name in done.stdout
    for name in ("b.py", "c.py", "l1.py"):
        assert f"in {name}" in done.stdout
