"""Every diagnostic code, with its exact LSP range, from a real `fxls check` run in the worker.

Each case is a small file; the expected range is computed from the file's own text (the
substring the diagnostic must cover), so the test states *what* is underlined, not numbers
copied from the tool's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEADER = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"

CASES: dict[str, str] = {
    "fx001.py": HEADER + '''class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:
            h = h.relu()
        s = "→→" if h.mean() > 0 else "←"
        return h
''',
    "fx002.py": HEADER + '''class Rows(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        for row in h:
            h = h + row
        return h
''',
    "fx003.py": HEADER + '''class Count(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        n = len(h)
        m = int(h.max())
        return h * n * m
''',
    "fx004.py": HEADER + '''class Boom(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        raise ValueError("boom")
''',
    "fx005.py": HEADER + '''import fxcore

g = fxcore.Graph()
x = g.placeholder("x")
y = g.call_function(torch.relu, (x,))
with g.inserting_before(y):
    z = g.call_function(torch.neg, (y,))
g.output(z)
''',
    "fx006.py": HEADER + '''import fxcore

g1 = fxcore.Graph()
a = g1.placeholder("a")
g1.output(a)
g2 = fxcore.Graph()
b = g2.placeholder("b")
c = g2.call_function(torch.add, (b, a))
g2.output(c)
''',
    "fx010.py": HEADER + '''class Dead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        unused = self.proj(x)
        kept = self.proj(x)  # fxls: ignore[FX010]
        return self.out(x)
''',
    "fx011.py": HEADER + '''class Mutate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        x.add_(1)
        return self.lin(x)
''',
    "fx012.py": HEADER + '''class Baked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) + torch.ones(4)
''',
    "fx013.py": HEADER + '''class Chatty(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        print("tracing", x.shape)
        return self.lin(x)
''',
    "fx014.py": HEADER + '''# fxls: args (torch.randn(2, 4),)
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls
''',
    "fx020.py": HEADER + '''class Swish(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return h * torch.sigmoid(h)
''',
    "fx100_syntax.py": HEADER + '''def broken(:
    pass
''',
    "fx100_import.py": HEADER + '''import not_a_module_fxls_test
''',
    "fx101.py": HEADER + '''class NeedsArgs(nn.Module):
    def __init__(self, d_in, d_out=4):
        super().__init__()
        if d_in % 11:  # no size fxls tries passes this
            raise ValueError("d_in must be a multiple of 11")
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, x):
        return self.lin(x)


# fxls: init d_in=22
class HasPragma(NeedsArgs):
    pass
''',
    "fx102_hang.py": HEADER + '''while True:
    pass
''',
    "shared_inner.py": HEADER + '''class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:
            return h
        return -h


class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x)


class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) + 1
''',
    "uses_other_file.py": HEADER + '''from shared_inner import Inner


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Inner()

    def forward(self, x):
        return self.block(x)
''',
}


def lsp_range(text: str, needle: str, *, occurrence: int = 0, end_needle: str | None = None):
    """The 0-based LSP (UTF-16) range of ``needle`` (or from it to the end of ``end_needle``)."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)
    end = start + len(needle)
    if end_needle is not None:
        end = text.index(end_needle, start) + len(end_needle)

    def position(offset: int) -> tuple[int, int]:
        before = text[:offset]
        line = before.count("\n")
        line_text = before[before.rfind("\n") + 1 :]
        return line, len(line_text.encode("utf-16-le")) // 2

    return (*position(start), *position(end))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("cases")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 8\n", encoding="utf-8")
    for name, text in CASES.items():
        (folder / name).write_text(text, encoding="utf-8")
    fxls = [sys.executable, "-m", "fxls", "check", "--format", "json", str(folder)]
    done = subprocess.run(fxls, capture_output=True, text=True, timeout=240, cwd=folder)
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["version"] == 1
    return {Path(f["path"]).name: f for f in document["files"]}


def ranges(file_result: dict, code: str) -> list[tuple[int, int, int, int]]:
    return [
        (
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["range"]["end"]["line"],
            d["range"]["end"]["character"],
        )
        for d in file_result["diagnostics"]
        if d["code"] == code
    ]


def test_fx001_condition_including_non_ascii_text_before_it(results):
    text = CASES["fx001.py"]
    assert ranges(results["fx001.py"], "FX001") == [
        lsp_range(text, "h.sum() > 0"),
        lsp_range(text, "h.mean() > 0"),
    ]


def test_fx002_the_loop(results):
    text = CASES["fx002.py"]
    assert ranges(results["fx002.py"], "FX002") == [
        lsp_range(text, "for row in h:", end_needle="h = h + row")
    ]


def test_fx003_each_conversion_call(results):
    text = CASES["fx003.py"]
    assert ranges(results["fx003.py"], "FX003") == [
        lsp_range(text, "len(h)"),
        lsp_range(text, "int(h.max())"),
    ]


def test_fx004_the_raising_statement(results):
    text = CASES["fx004.py"]
    assert ranges(results["fx004.py"], "FX004") == [lsp_range(text, 'raise ValueError("boom")')]
    assert results["fx004.py"]["modules"][0]["status"] == "partial"


def test_fx005_the_pass_line_that_created_the_using_node(results):
    text = CASES["fx005.py"]
    assert ranges(results["fx005.py"], "FX005") == [
        lsp_range(text, "g.call_function(torch.neg, (y,))")
    ]


def test_fx006_a_node_of_another_graph(results):
    text = CASES["fx006.py"]
    assert ranges(results["fx006.py"], "FX006") == [
        lsp_range(text, "g2.call_function(torch.add, (b, a))")
    ]


def test_fx010_dead_computation_and_the_ignore_pragma(results):
    text = CASES["fx010.py"]
    assert ranges(results["fx010.py"], "FX010") == [lsp_range(text, "self.proj(x)")]


def test_fx011_inplace_on_the_input(results):
    assert ranges(results["fx011.py"], "FX011") == [lsp_range(CASES["fx011.py"], "x.add_(1)")]


def test_fx012_the_expression_that_made_the_constant(results):
    text = CASES["fx012.py"]
    assert ranges(results["fx012.py"], "FX012") == [lsp_range(text, "torch.ones(4)")]


def test_fx013_the_trace_time_call(results):
    text = CASES["fx013.py"]
    assert ranges(results["fx013.py"], "FX013") == [lsp_range(text, 'print("tracing", x.shape)')]
    assert ranges(results["fx013.py"], "FX010") == []


def test_fx014_graph_differs_from_eager_at_the_class_name(results):
    text = CASES["fx014.py"]
    assert ranges(results["fx014.py"], "FX014") == [lsp_range(text, "Counter")]


def test_fx020_rewrite_on_the_matched_expression(results):
    text = CASES["fx020.py"]
    assert ranges(results["fx020.py"], "FX020") == [lsp_range(text, "h * torch.sigmoid(h)")]


def test_fx100_syntax_and_import_errors(results):
    syntax = ranges(results["fx100_syntax.py"], "FX100")
    assert len(syntax) == 1 and syntax[0][0] == CASES["fx100_syntax.py"].count(
        "\n", 0, CASES["fx100_syntax.py"].index("def broken")
    )
    text = CASES["fx100_import.py"]
    assert ranges(results["fx100_import.py"], "FX100") == [
        lsp_range(text, "import not_a_module_fxls_test")
    ]


def test_fx101_class_name_without_known_arguments(results):
    text = CASES["fx101.py"]
    assert ranges(results["fx101.py"], "FX101") == [lsp_range(text, "NeedsArgs")]
    statuses = {m["name"]: m["status"] for m in results["fx101.py"]["modules"]}
    assert statuses == {"NeedsArgs": "skipped", "HasPragma": "traced"}


def test_fx102_a_hang_at_import_times_out_and_the_next_files_still_work(results):
    text = CASES["fx102_hang.py"]
    # the line the loop was running when the timeout hit: either of its two lines, whole
    assert ranges(results["fx102_hang.py"], "FX102") in (
        [lsp_range(text, "while True:")],
        [lsp_range(text, "pass", occurrence=0)],
    )
    assert results["uses_other_file.py"]["modules"][0]["status"] == "partial"


def test_problem_in_a_submodule_traced_from_two_roots_is_reported_once(results):
    text = CASES["shared_inner.py"]
    assert ranges(results["shared_inner.py"], "FX001") == [lsp_range(text, "h.sum() > 0")]


def test_submodule_from_another_file_is_located_in_that_file(results):
    diagnostics = results["uses_other_file.py"]["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["FX001"]
    start = diagnostics[0]["range"]["start"]
    assert Path(diagnostics[0]["path"]).name == "shared_inner.py"
    expected = lsp_range(CASES["shared_inner.py"], "h.sum() > 0")
    assert (start["line"], start["character"]) == expected[:2]
