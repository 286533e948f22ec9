"""torch's own passes through a real `fxls check`, on small models of the file: in place
(imported from the installed torch and called by the file's pass) and as published (the
source of `torch/fx/experimental/merge_matmul.py` or `optimization.py`, read from the
installed torch, is the file, a model added). They give no error or warning; merge_matmul
sorts its graph at the end with `legalize_graph`, so only the copy with that line taken out
gets FX005, at the line that made the unsorted use.
"""

from __future__ import annotations

import inspect

import pytest
import torch.fx.experimental.merge_matmul as merge_matmul_module
import torch.fx.experimental.optimization as optimization_module

from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.test_passes import check_cases

SHARED_RHS = '''

class SharedRhs(torch.nn.Module):
    # fxls: args (torch.randn(2, 8), torch.randn(3, 8))
    def __init__(self):
        super().__init__()
        self.rhs = torch.nn.Parameter(torch.randn(8, 4))

    def forward(self, a, b):
        return torch.matmul(a, self.rhs).sum(0) + torch.matmul(b, self.rhs).sum(0)
'''

MERGE_IN_PLACE = '''import torch
import torch.fx as fx
from torch.fx.experimental.merge_matmul import merge_matmul
''' + SHARED_RHS + '''

def merge(gm: fx.GraphModule) -> fx.GraphModule:
    return merge_matmul(gm)
'''

PUBLISHED = inspect.getsource(merge_matmul_module)
MERGE_AS_PUBLISHED = PUBLISHED + SHARED_RHS
_SORT = "        legalize_graph(gm)\n"
assert PUBLISHED.count(_SORT) == 1
MERGE_WITHOUT_SORT = MERGE_AS_PUBLISHED.replace(_SORT, "")

CONV_BN_DROPOUT = '''

class ConvBnDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dropout = nn.Dropout(0.5)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8, affine=False)

    def forward(self, x):
        x = self.dropout(torch.relu(self.bn(self.conv(x))))
        return self.bn2(self.conv2(x))
'''

OPTIMIZATION_IN_PLACE = '''import torch
import torch.fx as fx
from torch import nn
from torch.fx.experimental.optimization import fuse, remove_dropout
''' + CONV_BN_DROPOUT + '''

def fuse_for_inference(gm: fx.GraphModule) -> fx.GraphModule:
    return remove_dropout(fuse(gm))
'''
OPTIMIZATION_AS_PUBLISHED = inspect.getsource(optimization_module) + CONV_BN_DROPOUT

CASES = {
    "merge_in_place.py": MERGE_IN_PLACE,
    "merge_as_published.py": MERGE_AS_PUBLISHED,
    "merge_without_sort.py": MERGE_WITHOUT_SORT,
    "optimization_in_place.py": OPTIMIZATION_IN_PLACE,
    "optimization_as_published.py": OPTIMIZATION_AS_PUBLISHED,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return check_cases(tmp_path_factory.mktemp("real_pass_results"), CASES, timeout=60)


def _passes_ran(report: dict, *names: str) -> None:
    ran = {p["name"]: p for p in report["passes"]}
    for name in names:
        assert ran[name]["runs"] and all(r["problem"] is None for r in ran[name]["runs"]), ran


@pytest.mark.parametrize("name", ["merge_in_place.py", "merge_as_published.py",
                                  "optimization_in_place.py", "optimization_as_published.py"])
def test_torchs_passes_give_no_false_report(results, name):
    assert results[name]["diagnostics"] == [], results[name]["diagnostics"]


def test_the_passes_really_ran_and_changed_the_graphs(results):
    _passes_ran(results["merge_in_place.py"], "merge")
    _passes_ran(results["merge_as_published.py"], "merge_matmul")
    _passes_ran(results["optimization_in_place.py"], "fuse_for_inference")
    _passes_ran(results["optimization_as_published.py"], "fuse", "remove_dropout")
    (run,) = {p["name"]: p for p in results["merge_in_place.py"]["passes"]}["merge"]["runs"]
    assert (run["added"], run["removed"]) == (6, 2), run  # cat, matmul, split, 2 getitems, rhs
    (run,) = {p["name"]: p for p in results["optimization_in_place.py"]["passes"]}[
        "fuse_for_inference"]["runs"]
    assert run["removed"] == 3, run  # bn, bn2, dropout


def test_merge_matmul_without_its_final_sort(results):
    found = results["merge_without_sort.py"]
    assert {d["code"] for d in found["diagnostics"]} == {"FX005"}, found["diagnostics"]
    assert set(ranges(found, "FX005")) == {
        lsp_range(MERGE_WITHOUT_SORT, "old.replace_all_uses_with(new)")}
