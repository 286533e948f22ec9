"""Quick fixes for problems in FX pass code: FX005 under ``inserting_before`` (insert after),
FX007 at the ``return`` of a stale GraphModule (recompile first), FX010 for a node a pass
added that nothing uses (``eliminate_dead_code()``). Each edit exactly, then each fix on the
diagnostics a real analysis reports, verified as the server verifies it: the edited text is
re-analysed in the worker and must lose its diagnostic without gaining an error."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from dataclasses import dataclass

import pytest

from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.codes import Severity
from fxls.fixes import Fix, apply_edits, fixes_for
from fxls.fixes.verify import fix_holds
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import SourceText
from fxls.report import Diagnostic, FileReport, Span
from tests.passes.test_passes import HEADER

NEGATE = '''def negate_after_relu(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = gm.graph.call_function(torch.neg, (node,))
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.recompile()
    return gm
'''

NO_RECOMPILE = '''def no_recompile(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            node.target = torch.sigmoid
    return gm
'''

ADDS_UNUSED = '''def adds_unused(gm: fx.GraphModule) -> fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            with gm.graph.inserting_after(node):
                gm.graph.call_function(torch.abs, (node,))
    gm.recompile()
    return gm
'''

SAMPLE = HEADER + NEGATE + "\n\n" + NO_RECOMPILE + "\n\n" + ADDS_UNUSED


def _span_of(source: str, needle: str, occurrence: int = 0) -> Span:
    seen = 0
    for number, line in enumerate(SourceText(source).lines(), 1):
        raw = line.encode()
        start = raw.find(needle.encode())
        while start >= 0:
            if seen == occurrence:
                return Span("m.py", number, number, start, start + len(needle.encode()))
            seen += 1
            start = raw.find(needle.encode(), start + 1)
    raise AssertionError(f"{needle!r} not in source")


def _fixes(source: str, code: str, needle: str, occurrence: int = 0, **data: object
           ) -> list[tuple[Fix, str]]:
    severity = "warning" if code == "FX010" else "error"
    span = _span_of(source, needle, occurrence)
    diagnostic = Diagnostic(code, severity, "m", span, "p", data=data)
    return [(fix, apply_edits(source, fix.edits)) for fix in fixes_for(source, diagnostic)]


# -- the edits ------------------------------------------------------------------------------
def test_fx005_renames_the_enclosing_inserting_before_only() -> None:
    needle = "gm.graph.call_function(torch.neg, (node,))"
    ((fix, fixed),) = _fixes(SAMPLE, "FX005", needle, inserting_before="relu",
                             **{"pass": "negate_after_relu"})
    assert fixed == SAMPLE.replace("with gm.graph.inserting_before(node):",
                                   "with gm.graph.inserting_after(node):")
    assert fix.title == "Insert after `node` instead of before it (`inserting_after`)"
    assert fix.safe


def test_fx005_at_a_helper_renames_the_with_around_the_pass_calls_of_it() -> None:
    source = HEADER + '''def make_neg(g, node):
    return g.call_function(torch.neg, (node,))


def negate(gm):
    for node in gm.graph.nodes:
        if node.target is torch.relu:
            with gm.graph.inserting_before(node):
                neg = make_neg(gm.graph, node)
            node.replace_all_uses_with(neg)
            neg.args = (node,)
    gm.recompile()
    return gm
'''
    ((_, fixed),) = _fixes(source, "FX005", "g.call_function(torch.neg, (node,))",
                           inserting_before="relu", **{"pass": "negate"})
    assert fixed == source.replace("inserting_before", "inserting_after")


def test_fx005_no_fix_without_the_anchor_or_under_an_inner_inserting_after() -> None:
    needle = "gm.graph.call_function(torch.neg, (node,))"
    assert _fixes(SAMPLE, "FX005", needle, **{"pass": "negate_after_relu"}) == []
    nested = SAMPLE.replace(
        "                neg = gm.graph.call_function(torch.neg, (node,))\n",
        "                with gm.graph.inserting_after(node):\n"
        "                    neg = gm.graph.call_function(torch.neg, (node,))\n")
    assert _fixes(nested, "FX005", needle, inserting_before="relu",
                  **{"pass": "negate_after_relu"}) == []


def test_fx007_recompile_on_its_own_line_before_the_return() -> None:
    ((fix, fixed),) = _fixes(SAMPLE, "FX007", "return gm", occurrence=1, recompile="gm",
                             **{"pass": "no_recompile"})
    assert fixed == SAMPLE.replace(
        "            node.target = torch.sigmoid\n    return gm\n",
        "            node.target = torch.sigmoid\n    gm.recompile()\n    return gm\n")
    assert fix.title == "Call `gm.recompile()` before returning"


def test_fx007_no_fix_for_another_name_or_a_return_sharing_its_line() -> None:
    assert _fixes(SAMPLE, "FX007", "return gm", occurrence=1, recompile="module",
                  **{"pass": "no_recompile"}) == []
    source = HEADER + "def p(gm):\n    gm.graph.lint(); return gm\n"
    assert _fixes(source, "FX007", "return gm", recompile="gm", **{"pass": "p"}) == []


def test_fx010_eliminate_dead_code_before_the_recompile_already_there() -> None:
    needle = "gm.graph.call_function(torch.abs, (node,))"
    (eliminate, removal) = _fixes(SAMPLE, "FX010", needle, dead_code=True,
                                  **{"pass": "adds_unused"})
    assert eliminate[1] == SAMPLE.replace(
        "(node,))\n    gm.recompile()\n    return gm\n",
        "(node,))\n    gm.graph.eliminate_dead_code()\n    gm.recompile()\n    return gm\n")
    assert eliminate[0].safe and "eliminate_dead_code" in eliminate[0].title
    # deleting the pass's own line is offered too, only on request (not by fixAll)
    assert not removal[0].safe and "                pass\n    gm.recompile()" in removal[1]


def test_fx010_recompile_added_after_eliminate_dead_code_and_self_skipped() -> None:
    source = HEADER + '''class AddAbs:
    def call(self, gm):
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                with gm.graph.inserting_after(node):
                    gm.graph.call_function(torch.abs, (node,))
        return (gm, True)
'''
    ((_, fixed), _) = _fixes(source, "FX010", "gm.graph.call_function(torch.abs, (node,))",
                             dead_code=True, **{"pass": "AddAbs.call"})
    assert fixed == source.replace(
        "        return (gm, True)\n",
        "        gm.graph.eliminate_dead_code()\n        gm.recompile()\n"
        "        return (gm, True)\n")


def test_fx010_a_graph_pass_without_return_at_the_end_of_the_file() -> None:
    source = HEADER + '''def insert_clamp(graph: fx.Graph) -> None:
    for node in graph.nodes:
        if node.op == "output":
            with graph.inserting_before(node):
                graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})'''
    needle = 'graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})'
    ((_, fixed), _) = _fixes(source, "FX010", needle, dead_code=True,
                             **{"pass": "insert_clamp"})
    assert fixed == source + "\n    graph.eliminate_dead_code()"
    ((_, fixed), _) = _fixes(source + "\n\n\nx = 1\n", "FX010", needle, dead_code=True,
                             **{"pass": "insert_clamp"})
    assert fixed == source + "\n    graph.eliminate_dead_code()\n\n\nx = 1\n"


def test_fx010_the_graph_module_a_module_pass_returns() -> None:
    source = HEADER + '''def fuse(model: nn.Module) -> nn.Module:
    traced = fx.symbolic_trace(model)
    for node in traced.graph.nodes:
        if node.target is torch.relu:
            with traced.graph.inserting_after(node):
                doubled = traced.graph.call_function(torch.mul, (node, 2.0))
    return traced
'''
    needle = "traced.graph.call_function(torch.mul, (node, 2.0))"
    ((_, fixed), _) = _fixes(source, "FX010", needle, dead_code=True, **{"pass": "fuse"})
    added = "    traced.graph.eliminate_dead_code()\n    traced.recompile()\n    return traced\n"
    assert added in fixed


def test_fx010_a_returned_flag_is_not_the_graph() -> None:
    source = HEADER + '''def insert_clamp(graph: fx.Graph) -> bool:
    changed = False
    for node in graph.nodes:
        if node.op == "output":
            with graph.inserting_before(node):
                graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})
            changed = True
    return changed
'''
    needle = 'graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})'
    ((_, fixed), _) = _fixes(source, "FX010", needle, dead_code=True,
                             **{"pass": "insert_clamp"})
    assert "    graph.eliminate_dead_code()\n    return changed\n" in fixed


def test_a_model_fx010_still_gets_only_the_removal() -> None:
    source = HEADER.replace("        return torch.relu(self.lin(x))\n",
                            "        y = x * 2\n        return torch.relu(self.lin(x))\n")
    ((fix, fixed),) = _fixes(source, "FX010", "x * 2")
    assert fix.safe and "y = x * 2" not in fixed


# -- verified on a real analysis, as the server verifies them --------------------------------
LATE = HEADER + '''def add_late(gm: fx.GraphModule) -> fx.GraphModule:
    nodes = list(gm.graph.nodes)
    lin, relu, out = nodes[1], nodes[2], nodes[-1]
    with gm.graph.inserting_before(lin):
        added = gm.graph.call_function(torch.add, (relu, 1.0))
    out.args = (added,)
    gm.recompile()
    return gm


def insert_clamp(graph: fx.Graph) -> None:
    for node in graph.nodes:
        if node.op == "output":
            with graph.inserting_before(node):
                graph.call_function(torch.clamp, (node.args[0],), {"min": 0.0})'''


@dataclass(slots=True)
class Checked:
    diagnostic: Diagnostic
    fix: Fix
    before: FileReport
    after: FileReport


def _analyze(requests: list[AnalysisRequest]) -> list[FileReport]:
    return asyncio.run(analyze_many(requests, python=sys.executable, jobs=4))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Checked]]:
    """Each file's every fix, its report before and the report of its edited text (analysed
    under the file's own path, unsaved, like the server's verification)."""
    folder = tmp_path_factory.mktemp("pass_fixes")
    settings = Settings(project=ProjectLayout(root=str(folder)))
    files = {"negate.py": SAMPLE, "late.py": LATE}
    paths = {name: folder / name for name in files}
    for name, text in files.items():
        paths[name].write_text(text, encoding="utf-8")
    befores = _analyze([AnalysisRequest(str(paths[n]), t, settings) for n, t in files.items()])
    candidates = [(name, before, d, f) for (name, text), before in zip(files.items(), befores,
                                                                      strict=True)
                  for d in before.diagnostics for f in fixes_for(text, d)]
    afters = _analyze([AnalysisRequest(str(paths[name]), apply_edits(files[name], f.edits),
                                       settings) for name, _, _, f in candidates])
    found: dict[str, list[Checked]] = {name: [] for name in files}
    for (name, before, d, f), after in zip(candidates, afters, strict=True):
        found[name].append(Checked(d, f, before, after))
    return found


def _errors(report: FileReport) -> Counter[str]:
    return Counter(d.code for d in report.diagnostics if d.severity is Severity.ERROR)


def test_the_sample_reports_the_three_pass_problems_with_their_data(checked) -> None:
    before = checked["negate.py"][0].before
    found = {d.code: d.data for d in before.diagnostics}
    assert set(found) == {"FX005", "FX007", "FX010"}
    assert found["FX005"]["inserting_before"] == "relu"
    assert found["FX007"]["recompile"] == "gm"
    assert found["FX010"]["pass"] == "adds_unused" and found["FX010"]["dead_code"] is True


@pytest.mark.parametrize("code, title_part, edited", [
    ("FX005", "inserting_after", "with gm.graph.inserting_after(node):"),
    ("FX007", "gm.recompile()", "            node.target = torch.sigmoid\n    gm.recompile()\n"),
    ("FX010", "eliminate_dead_code", "    gm.graph.eliminate_dead_code()\n    gm.recompile()\n"),
    ("FX010", "Remove unused computation", "                pass\n    gm.recompile()\n"),
])
def test_each_pass_fix_removes_its_diagnostic_and_adds_no_error(
        checked, code: str, title_part: str, edited: str) -> None:
    (item,) = [c for c in checked["negate.py"]
               if c.fix.code == code and title_part in c.fix.title]
    assert edited in apply_edits(SAMPLE, item.fix.edits)
    assert fix_holds(item.before, item.after, item.fix) == (True, "verified by re-tracing")
    assert not any(d.code == code for d in item.after.diagnostics), item.after.diagnostics
    for error, count in _errors(item.after).items():
        assert count <= _errors(item.before)[error]
    assert [m.status for m in item.after.modules] == ["traced"]


def test_verification_refuses_a_fix_that_leaves_the_graph_invalid(checked) -> None:
    """Inserting after `lin` still puts `add` before the `relu` it uses: not offered; the
    graph pass's eliminate_dead_code is."""
    by_code = {c.fix.code: c for c in checked["late.py"] if c.fix.safe}
    late = by_code["FX005"]
    assert late.fix.title == "Insert after `lin` instead of before it (`inserting_after`)"
    assert fix_holds(late.before, late.after, late.fix) == (False, "FX005 is still reported")
    clamp = by_code["FX010"]
    assert clamp.fix.title.endswith("`graph.eliminate_dead_code()`")
    assert fix_holds(clamp.before, clamp.after, clamp.fix)[0]
    assert [d.code for d in clamp.after.diagnostics] == ["FX005"]
