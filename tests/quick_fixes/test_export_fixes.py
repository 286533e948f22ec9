"""Quick fixes for export and compile problems (issue 35), each on a model written for it:
proposed from the diagnostic a real analysis reports, verified as the server verifies it
(the edited text analysed again with the fix's torch tier: the diagnostic must be gone from
its place and the module's eager outputs on its example inputs unchanged), the exact edit,
and torch itself, in a plain process, exporting or compiling the fixed text. A fix that would
change the outputs is proposed but not verified."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.fixes import Fix, apply_edits, fixes_for
from fxls.fixes.base import TextEdit
from fxls.fixes.verify import fix_holds
from fxls.fixes.verify_targets import moved_lines, target_fix_holds, verification_targets
from fxls.project.setting_groups import ProjectLayout, TracerTargets
from fxls.project.settings import Settings
from fxls.project.source_text import SourceText
from fxls.report import Diagnostic, FileReport, ModuleReport, Span, TargetGraphs
from fxls.server.code_actions import FixCache
from tests.torch_answers import torch_answer

HERE = Path(__file__).parent
HEAD = "import torch\nfrom torch import nn\n\n\n"

ASSUME = HEAD + """class Net(nn.Module):
    # fxls: args (torch.arange(8.0) - 2,)
    # fxls: targets export
    def forward(self, x):
        n = (x > 0).sum().item()
        if n > 2:
            return x * 2
        return x - 1
"""
SIZE = HEAD + """class Net(nn.Module):
    # fxls: args (torch.arange(8.0) - 2,)
    # fxls: targets export
    def forward(self, x):
        n = (x > 0).sum().item()
        y = x[:3] * 2 if n >= 0 else x[:3]
        return y
"""
COND = HEAD + """class Net(nn.Module):
    # fxls: args (torch.ones(2, 4),)
    # fxls: targets export
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        if h.sum() > 0:
            y = h * 2
            y = self.proj(y)
        else:
            y = h - 1
        return y + x
"""
WHERE = HEAD + """class Net(nn.Module):
    # fxls: args (torch.ones(2, 4),)
    # fxls: targets export
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        if h.mean() > 0:
            return h.relu()
        return h.sigmoid()
"""
#: on the example the branch is not taken: torch.where computes both, and `add_` changes `h`
SIDE_EFFECT = HEAD + """class Net(nn.Module):
    # fxls: args (torch.ones(2, 4),)
    # fxls: targets export
    def forward(self, x):
        h = x * 3
        if h.sum() > 100:
            y = h.add_(1)
        else:
            y = h - 1
        return y * 2
"""
PRINTS = HEAD + """class Net(nn.Module):
    # fxls: args (torch.ones(2, 4),)
    # fxls: targets compile
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        print("shape", h.shape)
        return h.relu()
"""
LIBRARY = "import os\n\n" + HEAD + """def cwd_bias(x):
    return x + len(os.getcwd())


class Net(nn.Module):
    # fxls: args (torch.ones(2, 4),)
    # fxls: targets compile
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        return cwd_bias(h).relu()
"""
CASES = {"assume": ASSUME, "size": SIZE, "cond": COND, "where": WHERE,
         "side_effect": SIDE_EFFECT, "prints": PRINTS, "library": LIBRARY}


@dataclass
class Checked:
    diagnostic: Diagnostic
    fix: Fix
    before: FileReport
    after: FileReport

    @property
    def verdict(self) -> tuple[bool, str]:
        return fix_holds(self.before, self.after, self.fix)


def _analyze(requests: list[AnalysisRequest]) -> list[FileReport]:
    return asyncio.run(analyze_many(requests, python=sys.executable, jobs=2))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("export_fixes")


@pytest.fixture(scope="module")
def checked(folder: Path) -> dict[str, list[Checked]]:
    """Each case's fixes of export and compile problems, with the report before and the
    report of the edited text analysed as the server's verification analyses it."""
    def settings(targets: tuple[str, ...]) -> Settings:
        return Settings(project=ProjectLayout(root=str(folder)),
                        tracers=TracerTargets(targets=targets))

    paths = {name: folder / f"{name}.py" for name in CASES}
    for name, text in CASES.items():
        paths[name].write_text(text, encoding="utf-8")
    befores = _analyze([AnalysisRequest(str(paths[name]), text, settings(("export", "compile")))
                        for name, text in CASES.items()])
    candidates = [(name, before, d, f)
                  for (name, text), before in zip(CASES.items(), befores, strict=True)
                  for d in before.diagnostics for f in fixes_for(text, d) if f.tier]
    afters = _analyze([
        AnalysisRequest(str(paths[name]), apply_edits(CASES[name], f.edits),
                        settings(verification_targets(before, f.tier)))
        for name, before, _, f in candidates])
    found: dict[str, list[Checked]] = {name: [] for name in CASES}
    for (name, before, d, f), after in zip(candidates, afters, strict=True):
        found[name].append(Checked(d, f, before, after))
    return found


def _span_of(source: str, needle: str) -> tuple[int, int, int, int]:
    for number, line in enumerate(SourceText(source).lines(), 1):
        start = line.encode().find(needle.encode())
        if start >= 0:
            return number, start, number, start + len(needle.encode())
    raise AssertionError(f"{needle!r} not in source")


def _one(checked: dict[str, list[Checked]], case: str, title_part: str) -> Checked:
    (item,) = [c for c in checked[case] if title_part in c.fix.title]
    return item


@pytest.mark.parametrize("case, code, expression", [
    ("assume", "FX201", "n > 2"),
    ("size", "FX201", "n >= 0"),
    ("cond", "FX201", "h.sum() > 0"),
    ("where", "FX201", "h.mean() > 0"),
    ("side_effect", "FX201", "h.sum() > 100"),
    ("prints", "FX301", 'print("shape", h.shape)'),
    ("library", "FX301", "os.getcwd()"),
])
def test_each_case_reports_its_problem_at_the_exact_range(
        checked, case: str, code: str, expression: str) -> None:
    (before,) = {id(c.before): c.before for c in checked[case]}.values()
    found = [(d.code, (d.span.line, d.span.col, d.span.end_line, d.span.end_col))
             for d in before.diagnostics]
    assert found == [(code, _span_of(CASES[case], expression))]


_CHECKED_N = ASSUME.replace("        n = (x > 0).sum().item()\n",
                            "        n = (x > 0).sum().item()\n        torch._check(n > 2)\n")
_SIZE_N = SIZE.replace("        n = (x > 0).sum().item()\n",
                       "        n = (x > 0).sum().item()\n        torch._check_is_size(n)\n")
_COND = COND.replace("""        if h.sum() > 0:
            y = h * 2
            y = self.proj(y)
        else:
            y = h - 1
""", """        def true_fn(h):
            y = h * 2
            y = self.proj(y)
            return y

        def false_fn(h):
            y = h - 1
            return y

        y = torch.cond(h.sum() > 0, true_fn, false_fn, (h,))
""")
_ASSUME_COND = ASSUME.replace("""        if n > 2:
            return x * 2
        return x - 1
""", """        def true_fn(x):
            return x * 2

        def false_fn(x):
            return x - 1

        return torch.cond(n > 2, true_fn, false_fn, (x,))
""")
_WHERE = WHERE.replace("""        if h.mean() > 0:
            return h.relu()
        return h.sigmoid()
""", "        return torch.where(h.mean() > 0, h.relu(), h.sigmoid())\n")
_PRINTS = PRINTS.replace('        print("shape", h.shape)\n',
                         "        if not torch.compiler.is_compiling():\n"
                         '            print("shape", h.shape)\n')
_NONSTRICT = LIBRARY.replace("def cwd_bias", "@torch._dynamo.nonstrict_trace\ndef cwd_bias")
_DISABLE = LIBRARY.replace("def cwd_bias", "@torch.compiler.disable\ndef cwd_bias")

OFFERED = [
    ("assume", "Assume `n > 2` for export (`torch._check`)", _CHECKED_N),
    ("assume", "torch.cond", _ASSUME_COND),
    ("size", "Assume `n` is a size for export (`torch._check_is_size`)", _SIZE_N),
    ("cond", "torch.cond", _COND),
    ("where", "Return `torch.where(...)` of both branches", _WHERE),
    ("prints", "Run it only eagerly (`if not torch.compiler.is_compiling():`)", _PRINTS),
    ("library", "`@torch._dynamo.nonstrict_trace`", _NONSTRICT),
    ("library", "`@torch.compiler.disable`", _DISABLE),
]


@pytest.mark.parametrize("case, title_part, fixed", OFFERED)
def test_each_fix_kind_is_verified_with_its_exact_edit(
        checked, case: str, title_part: str, fixed: str) -> None:
    item = _one(checked, case, title_part)
    assert apply_edits(CASES[case], item.fix.edits) == fixed
    assert not item.fix.safe  # each changes what the code says: never in fix-all
    assert item.verdict == (True, f"verified by the {item.fix.tier} tier on the edited text")
    (module,) = item.after.modules
    assert module.eager_outputs == item.before.modules[0].eager_outputs


@pytest.fixture(scope="module")
def torch_says(folder: Path) -> dict[str, dict]:
    """torch.export, dynamo's explain and the eager outputs of each case and each fixed
    text, in a plain process."""
    texts = {f"{case}.py": CASES[case] for case in {case for case, _, _ in OFFERED}}
    texts |= {f"{case}_fixed_{index}.py": fixed
              for index, (case, _, fixed) in enumerate(OFFERED)}
    reference = folder / "reference"
    reference.mkdir()
    for name, text in texts.items():
        (reference / name).write_text(text, encoding="utf-8")
    script = HERE / "fixed_reference.py"
    answer = torch_answer([sys.executable, str(script), *sorted(texts)],
                          [script, *(reference / name for name in sorted(texts))],
                          cwd=reference, timeout=600)
    return json.loads(answer.strip().splitlines()[-1])


@pytest.mark.parametrize("index", range(len(OFFERED)))
def test_torch_exports_or_compiles_each_fixed_text_to_the_same_outputs(
        torch_says, index: int) -> None:
    case, title_part, _ = OFFERED[index]
    original, fixed = torch_says[f"{case}.py"], torch_says[f"{case}_fixed_{index}.py"]
    if case in ("prints", "library"):  # compile fixes
        assert original["breaks"] and fixed["breaks"] == (
            ["Skip calling `torch.compiler.disable()`d function"]
            if "disable" in title_part else [])
    else:
        assert original["export_error"] and fixed["export_error"] is None
    assert fixed["outputs"] == pytest.approx(original["outputs"])


def test_a_fix_that_changes_the_outputs_is_not_offered(checked) -> None:
    """torch.where computes both branches: the one with `add_` changes `h` for the other;
    a check that is false on the example raises there. Both export, neither is offered."""
    where = _one(checked, "side_effect", "torch.where")
    assert "y = torch.where(h.sum() > 100, h.add_(1), h - 1)\n" in apply_edits(
        SIDE_EFFECT, where.fix.edits)
    assert where.after.modules[0].targets == {"export": "exported"}
    assert where.verdict == (False, "Net computes different outputs after the fix")
    false_check = _one(checked, "assume", "Assume `n <= 2`")
    assert false_check.after.modules[0].targets == {"export": "exported"}
    assert false_check.verdict == (False, "Net raises on its example inputs after the fix")
    cond = _one(checked, "side_effect", "torch.cond")  # a branch may not mutate an operand
    assert cond.verdict == (False, "the fix introduces FX209")


def test_no_check_is_proposed_for_a_tensor_condition_and_no_where_for_a_number() -> None:
    """`torch._check` takes a Python bool (a size, an `.item()`), `torch.where` a tensor."""
    def titles(source: str, needle: str) -> list[str]:
        line, col, end_line, end_col = _span_of(source, needle)
        diagnostic = Diagnostic("FX201", "error", "m", Span("m.py", line, end_line, col,
                                                            end_col), "Net")
        return [fix.title for fix in fixes_for(source, diagnostic)]

    assert titles(COND, "h.sum() > 0") == [
        "Rewrite the branch with `torch.cond` (both branches traced, one runs)"]
    assert not [t for t in titles(ASSUME, "n > 2") if "where" in t]


def test_a_span_is_followed_through_the_edits_of_its_fix() -> None:
    span = Span("m.py", 10, 10, 8, 20)
    assert moved_lines(span, [TextEdit(6, 0, 6, 0, "    torch._check(n > 2)\n")]) == range(11, 12)
    assert moved_lines(span, [TextEdit(12, 0, 12, 0, "x\n")]) == range(10, 11)
    rewritten = TextEdit(10, 0, 11, 0, "    if not c:\n        print(x)\n")
    assert moved_lines(span, [rewritten]) == range(10, 13)


async def test_fix_all_is_decided_before_the_fixes_a_torch_tier_verifies(monkeypatch) -> None:
    """The server's background verification takes the cheap fixes first: `source.fixAll`
    (safe fixes only) never waits for seconds of export per torch-tier candidate."""
    def one_fix_per_line(text: str, diagnostic: Diagnostic) -> list[Fix]:
        line = diagnostic.span.line
        return [Fix(f"fix {line}", "FX013", [TextEdit(line, 0, line, 5, "")],
                    tier="export" if line == 1 else None)]

    monkeypatch.setattr("fxls.server.code_actions.fixes_for", one_fix_per_line)
    cache = FixCache()
    seen: list[tuple[int, str | None, bool]] = []

    async def analyze(variant: str, lane: int, tier: str | None = None) -> None:
        seen.append((variant.split("\n").index(""), tier, cache.fix_all_decided))

    text = "line1\nline2\n"
    report = FileReport("/m.py", diagnostics=[
        Diagnostic("FX013", "warning", "m", Span("/m.py", line, line, 0, 5)) for line in (1, 2)])
    cache.reset(text, report)
    await cache.verify_all(text, report, analyze)
    assert seen == [(1, None, False), (0, "export", True)]
    assert cache.finished and cache.fix_all_decided


def test_a_fix_is_verified_for_the_files_targets_without_the_other_torch_tier() -> None:
    both = FileReport("/m.py", targets=["symbolic_trace", "export", "compile"])
    assert verification_targets(both, "export") == ("symbolic_trace", "export")
    assert verification_targets(both, "compile") == ("symbolic_trace", "compile")
    # only a class's `# fxls: targets export` asks for export: the other classes must not
    pragma_only = FileReport("/m.py", targets=["symbolic_trace"])
    assert verification_targets(pragma_only, "export") == ("symbolic_trace",)


def test_a_conditional_expression_torch_places_whole_is_fixed_at_its_condition() -> None:
    """export places the jump of `a if n else b` at the whole expression."""
    source = HEAD + ("class Net(nn.Module):\n    def forward(self, x):\n"
                     "        n = (x > 0).sum().item()\n"
                     "        y = x[:2] * 2 if n else x[:2]\n        return y\n")
    line, col, end_line, end_col = _span_of(source, "x[:2] * 2 if n else x[:2]")
    diagnostic = Diagnostic("FX201", "error", "m", Span("m.py", line, end_line, col, end_col),
                            "Net")
    fixed = [apply_edits(source, fix.edits) for fix in fixes_for(source, diagnostic)]
    check = "        n = (x > 0).sum().item()\n        torch._check(n != 0)\n"
    assert [check in text for text in fixed] == [True, False]
    assert "torch._check(n == 0)" in fixed[1]


def test_a_class_the_job_had_no_time_for_is_not_judged_unless_it_is_the_fixed_one() -> None:
    at = Span("/m.py", 9, 9, 11, 16)
    fix = Fix("check", "FX201", [TextEdit(9, 0, 9, 0, "        torch._check(n > 2)\n")],
              tier="export", at=at)
    out_of_time = "not run: out of time (the job's timeout is 30 s)"

    def report(fixed: str, other: str, *found: Diagnostic) -> FileReport:
        def outputs(value: float, status: str) -> TargetGraphs | None:
            return TargetGraphs(eager_outputs=[value]) if status != out_of_time else None

        modules = [ModuleReport("Net", "partial", targets={"export": fixed},
                                target_graphs=outputs(1.0, fixed)),
                   ModuleReport("Big", "traced", targets={"export": other},
                                target_graphs=outputs(2.0, other))]
        return FileReport("/m.py", modules, list(found), targets=["export"])

    before = report("failed: 1 problem", "exported",
                    Diagnostic("FX201", "error", "m", at, "Net"))
    assert target_fix_holds(before, report("exported", out_of_time), fix) == (
        True, "verified by the export tier on the edited text")
    assert target_fix_holds(before, report(out_of_time, "exported"), fix)[0] is False
    moved = Span("/m.py", 10, 10, 11, 16)  # the same guard, a line down after the check
    assert target_fix_holds(before, report("failed: 1 problem", "exported", Diagnostic(
        "FX201", "error", "m", moved, "Net")), fix) == (False, "FX201 is still reported there")
