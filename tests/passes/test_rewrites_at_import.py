"""Rewrites a file runs at import on a GraphModule bound to a global, checked where they run:
a module-level `replace_pattern(traced, pattern, replacement)`, a loop editing the graph
by hand, `Cls(traced).transform()`. A swapped argument that silently changes the outputs
gets FX017 at the statement; the correct twin is silent.
"""

from __future__ import annotations

import pytest

from tests.diagnostics.test_codes import lsp_range, ranges
from tests.passes.test_passes import check_cases

SUB_NET = '''import torch
import torch.fx as fx
from torch import nn
from torch.fx import subgraph_rewriter


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        return torch.sub(self.a(x), self.b(x))


def pattern(x, y):
    return torch.sub(x, y)


def replacement(x, y):
    return torch.add(x, torch.neg(y))


'''

REPLACE_AT_IMPORT = SUB_NET + '''traced = fx.symbolic_trace(Net())
subgraph_rewriter.replace_pattern(traced, pattern, replacement)
'''

REPLACE_AT_IMPORT_BUG = REPLACE_AT_IMPORT.replace("torch.add(x, torch.neg(y))",
                                                  "torch.add(y, torch.neg(x))")

# the original kept by the file, the rewrite made by hand on its graph at module level
EDIT_AT_IMPORT = SUB_NET + '''model = Net()
traced = fx.symbolic_trace(model)
for node in traced.graph.nodes:
    if node.target is torch.sub:
        with traced.graph.inserting_after(node):
            added = traced.graph.call_function(torch.add, (node.args[0], node.args[1]))
        node.replace_all_uses_with(added)
        traced.graph.erase_node(node)
traced.recompile()
'''

TRANSFORMED_AT_IMPORT = SUB_NET + '''class SubToAdd(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target is torch.sub:
            target = torch.add
        return super().call_function(target, args, kwargs)


traced = fx.symbolic_trace(Net())
same = fx.Transformer(traced).transform()
changed = SubToAdd(traced).transform()
'''

FILES = {
    "replace_at_import.py": REPLACE_AT_IMPORT,
    "replace_at_import_bug.py": REPLACE_AT_IMPORT_BUG,
    "edit_at_import.py": EDIT_AT_IMPORT,
    "transformed_at_import.py": TRANSFORMED_AT_IMPORT,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return check_cases(tmp_path_factory.mktemp("rewrites_at_import"), FILES)


def test_a_module_level_replace_pattern_that_changes_the_outputs(results):
    """A swapped argument in the replacement: FX017 at the replace_pattern line, the graph
    before being the trace the file made, run again with the rewritten module's weights."""
    text = REPLACE_AT_IMPORT_BUG
    found = results["replace_at_import_bug.py"]
    line = "subgraph_rewriter.replace_pattern(traced, pattern, replacement)"
    assert ranges(found, "FX017") == [lsp_range(text, line)]
    (item,) = found["diagnostics"]
    assert "`replace_pattern` changes the outputs of `traced`" in item["message"]
    assert results["replace_at_import.py"]["diagnostics"] == []


def test_a_module_level_graph_edit_on_the_kept_model_that_changes_the_outputs(results):
    text = EDIT_AT_IMPORT
    found = results["edit_at_import.py"]
    assert ranges(found, "FX017") == [lsp_range(text, "for node in traced.graph.nodes:",
                                                end_needle="traced.graph.erase_node(node)")]
    (item,) = found["diagnostics"]
    assert item["message"].startswith(
        "the graph edits of this statement change the outputs of `traced`"), item


def test_a_transformer_run_at_import_compared_with_the_graph_it_was_made_from(results):
    """`changed` against `traced`, the file's unedited GraphModule; the identity Transformer
    is silent. (The class itself, run on `Net` as a pass, changes the outputs too.)"""
    text = TRANSFORMED_AT_IMPORT
    found = results["transformed_at_import.py"]
    assert sorted(ranges(found, "FX017")) == sorted([
        lsp_range(text, "SubToAdd", occurrence=0),
        lsp_range(text, "changed = SubToAdd(traced).transform()")])
    at_import = next(d for d in found["diagnostics"] if d["range"]["start"]["character"] == 0)
    assert "`SubToAdd` changes the outputs of `traced`" in at_import["message"]
    assert [d for d in found["diagnostics"] if d["code"] != "FX017"] == []
