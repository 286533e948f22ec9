"""`fxls check` of files that attack their own report (issue 20): each attack is that file's
FX102 (or is coalesced, capped, ignored), and nothing else is lost: the other files' results
are all there (one run, real worker)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.security import hostile_reports as hostile

FILES = {
    "forged_to_dict.py": hostile.FORGED_TO_DICT,
    "bad_types.py": hostile.BAD_TYPES,
    "out_of_range.py": hostile.OUT_OF_RANGE,
    "many_diagnostics.py": hostile.MANY_DIAGNOSTICS,
    "oversized_frame.py": hostile.OVERSIZED_FRAME,
    "partial_flood.py": hostile.PARTIAL_FLOOD,
    "forged_imports.py": hostile.FORGED_IMPORTS,
    "zz_good.py": hostile.GOOD,
}
INVALID = "the analysis produced an invalid report"
SUSPECT = "imports fxls: analysed code must not change fxls itself or write to its result pipe"


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str],
                                                                dict[str, list[dict]]]:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\n", encoding="utf-8")
    for name, source in FILES.items():
        (folder / name).write_text(source, encoding="utf-8")
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress", "."]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=folder)
    files = {entry["path"][2:]: entry["diagnostics"] for entry in json.loads(done.stdout)["files"]}
    return done, files


def _found(diagnostics: list[dict]) -> list[tuple[str, int, str]]:
    return [(d["code"], d["range"]["start"]["line"], d["message"]) for d in diagnostics]


def test_every_file_is_reported_and_the_good_ones_results_are_all_there(checked) -> None:
    done, files = checked
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert sorted(files) == sorted(FILES)
    assert [(code, line) for code, line, _ in _found(files["zz_good.py"])] == [("FX001", 11)]
    # attacks that were contained leave the attacking file's own results intact
    assert [(c, n) for c, n, _ in _found(files["partial_flood.py"])] == [("FX001", 18)]
    assert [(c, n) for c, n, _ in _found(files["forged_imports.py"])] == [("FX001", 29)]


@pytest.mark.parametrize(("name", "line", "detail"), [
    ("forged_to_dict.py", 2, "path: is missing"),
    ("bad_types.py", 2, "path: is an integer, expected a string"),
    ("out_of_range.py", 2, "diagnostics[0].span: lines 5000-5000 are outside the document "
                           "(23 lines)"),
    ("oversized_frame.py", 4, "the job sent a result frame of 1,099,511,627,776 bytes; the "
                              "limit is 67,108,864 bytes"),
])
def test_a_forged_report_is_that_files_fx102_at_the_line_importing_fxls(
    checked, name: str, line: int, detail: str
) -> None:
    _, files = checked
    (fx102,) = [d for d in _found(files[name]) if d[0] == "FX102"]
    assert fx102 == ("FX102", line, f"{INVALID} ({detail}); line {line + 1} {SUSPECT}")


def test_200000_diagnostics_are_capped_to_1000_and_one_that_says_so(checked) -> None:
    done, files = checked
    found = _found(files["many_diagnostics.py"])
    assert len(found) == 1001 and len(done.stdout) < 1_000_000  # was 200,000 and 70 MB
    assert ("FX001", 1, "the one error") in found  # the last of 200,000, but the one error
    assert found[-1] == ("FX102", 0, "the analysis reported 200,000 diagnostics for this file; "
                                     "fxls shows at most 1,000: the 199,000 least severe were "
                                     "dropped")
