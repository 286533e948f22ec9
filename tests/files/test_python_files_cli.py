"""`fxls check` reads files as Python does (BOM, PEP 263), reports an undecodable file as one
FX100 and checks the others; `--select`/`--ignore` take code prefixes (real worker)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fxls.codes import code_selected, parse_code_list

HEAD = "import torch\nfrom torch import nn\n"
GATE = "class Gate(nn.Module):\n    def forward(self, x):\n        print('traced')\n" \
    "        if x.sum() > 0:\n            return x\n        return -x\n"
FILES: dict[str, bytes] = {
    "a_bom.py": b"\xef\xbb\xbf" + (HEAD + GATE).encode(),
    "b_latin1.py": b"# -*- coding: latin-1 -*-\n" + (HEAD + "NAME = 'caf\xe9'\n" + GATE)
    .encode("latin-1"),
    "c_undecodable.py": (HEAD + "NAME = '").encode() + b"caf\xe9'\n" + GATE.encode(),
    "d_unknown_coding.py": b"# coding: no-such-codec\n" + (HEAD + GATE).encode(),
    "e_deep.py": (HEAD + "VALUE = " + "-" * 50_000 + "1\n").encode(),
    "f_deep_not.py": (HEAD + "FLAG = (" + "not " * 5_000 + "True)\n" + GATE).encode(),
    "z_after.py": (HEAD + GATE).encode(),
}


def _check(folder: Path, *options: str) -> tuple[int, dict[str, list[tuple]]]:
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", *options, "."]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    found = {}
    for entry in json.loads(done.stdout)["files"]:
        found[entry["path"]] = [
            (d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"],
             d["range"]["end"]["line"], d["range"]["end"]["character"])
            for d in entry["diagnostics"]]
    return done.returncode, found


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("files")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 10\n", encoding="utf-8")
    for name, data in FILES.items():
        (folder / name).write_bytes(data)
    return folder


def test_files_are_read_as_python_reads_them(folder: Path):
    code, found = _check(folder)
    gate = [("FX013", 4, 8, 4, 23), ("FX001", 5, 11, 5, 22)]
    assert code == 1
    assert found["./a_bom.py"] == gate
    assert found["./b_latin1.py"] == [("FX013", 6, 8, 6, 23), ("FX001", 7, 11, 7, 22)]
    assert found["./c_undecodable.py"] == [("FX100", 2, 11, 2, 12)]
    assert found["./d_unknown_coding.py"] == [("FX100", 0, 0, 0, 23)]
    assert found["./e_deep.py"] == [("FX100", 2, 0, 2, 50_009)]
    assert found["./f_deep_not.py"] == [("FX100", 2, 0, 2, 20_013)]
    assert found["./z_after.py"] == gate


def test_select_and_ignore_take_prefixes(folder: Path):
    code, found = _check(folder, "--select", "FX0", "--ignore", "FX01")
    assert code == 1
    assert found["./z_after.py"] == [("FX001", 5, 11, 5, 22)]
    assert found["./c_undecodable.py"] == []
    code, found = _check(folder, "--ignore", "FX0,FX1")
    assert code == 0
    assert all(diagnostics == [] for diagnostics in found.values())


def test_one_code_parser_for_options_and_settings():
    assert parse_code_list(" fx0, FX013,fx0 ") == ("FX0", "FX013")
    assert parse_code_list(["fx01"]) == ("FX01",)
    assert code_selected("FX001", ("FX0",), ())
    assert not code_selected("FX013", ("FX0",), ("FX01",))
    assert not code_selected("FX100", ("FX0",), ())
    assert code_selected("FX100", (), ("FX0",))


def test_an_unknown_code_is_a_usage_error(folder: Path):
    command = [sys.executable, "-m", "fxls", "check", "--select", "FX9", "z_after.py"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=folder)
    assert done.returncode == 2
    assert "unknown diagnostic code or prefix: FX9" in done.stderr


def test_tool_fxls_select_and_ignore_take_prefixes(tmp_path: Path):
    from fxls.analysis.pipeline import analyze_source
    from fxls.project.settings import load_settings

    (tmp_path / "pyproject.toml").write_text(
        '[tool.fxls]\nselect = ["fx0"]\nignore = ["FX013", " fx00"]\n', encoding="utf-8")
    source = HEAD + "import sys\n\n\nclass Gate2(nn.Module):\n    def forward(self, x):\n" \
        "        print('traced')\n        x.add_(1)\n        y = x * 2\n" \
        "        if x.sum() > 0:\n            return x\n        return -x\n"
    path = tmp_path / f"m_{tmp_path.name}.py"
    path.write_text(source, encoding="utf-8")
    report = analyze_source(str(path), source, load_settings(path))
    assert [(d.code, d.span.line, d.span.col, d.span.end_col) for d in report.diagnostics] == [
        ("FX011", 9, 8, 17), ("FX010", 10, 12, 17)]
