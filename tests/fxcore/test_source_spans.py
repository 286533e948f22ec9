"""Where nodes come from (``meta["source"]``/``["source_stack"]``) and the recovering trace.

Models are written to a temporary file and imported from there, so expected positions are
computed from that file's text: 1-based lines, 0-based UTF-8 *byte* columns.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.fx

import fxcore
from fxcore.recovering import IssueKind, trace_collecting_issues
from fxcore.source import SourceSpan

_counter = itertools.count()


def load_module(tmp_path: Path, source: str) -> tuple[ModuleType, str]:
    """Write ``source`` to a fresh file under ``tmp_path`` and import it."""
    text = textwrap.dedent(source).lstrip("\n")
    name = f"span_models_{next(_counter)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, text


def where(text: str, needle: str, end_needle: str | None = None, nth: int = 1) -> tuple[int, ...]:
    """(line, col, end_line, end_col) of ``needle`` (through ``end_needle``) in ``text``.

    Columns are UTF-8 byte offsets, like Python's code positions.
    """
    start = -1
    for _ in range(nth):
        start = text.index(needle, start + 1)
    end = start + len(needle)
    if end_needle is not None:
        end = text.index(end_needle, start) + len(end_needle)

    def position(offset: int) -> tuple[int, int]:
        line_start = text.rfind("\n", 0, offset) + 1
        line = text.count("\n", 0, offset) + 1
        return line, len(text[line_start:offset].encode("utf-8"))

    (line, col), (end_line, end_col) = position(start), position(end)
    return line, col, end_line, end_col


def pos(span: SourceSpan | None) -> tuple[int, ...]:
    assert span is not None
    return span.line, span.col, span.end_line, span.end_col


def node(gm: Any, name: str) -> Any:
    return next(n for n in gm.graph.nodes if n.name == name)


MODELS = """
import torch
from torch import nn


def helper(x):
    return x.sigmoid() * 2


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).tanh()


class Middle(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) - 1


class Root(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.middle = Middle()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        a = x + 1
        b = a.relu()
        c = self.lin(b)
        d = helper(c)
        e = self.middle(d)
        s = "é, ü"; \u03b1 = e.relu()
        m = torch.add(
            \u03b1,
            self.w,
        )
        return m
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str, str]:
    module, text = load_module(tmp_path_factory.mktemp("spans"), MODELS)
    gm = fxcore.symbolic_trace(module.Root())
    return gm, text, module.__file__


def test_binary_operator(traced: tuple[Any, str, str]) -> None:
    gm, text, file = traced
    span = node(gm, "add").meta["source"]
    assert pos(span) == where(text, "x + 1")
    assert span.file == file
    assert span.function == "forward"
    assert node(gm, "add").meta["source_stack"] == (span,)


def test_method_call(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    assert pos(node(gm, "relu").meta["source"]) == where(text, "a.relu()")


def test_submodule_call(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    lin = node(gm, "lin")
    assert lin.op == "call_module"
    assert pos(lin.meta["source"]) == where(text, "self.lin(b)")
    assert len(lin.meta["source_stack"]) == 1


def test_helper_function_has_two_frames(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    for name, needle in (("sigmoid", "x.sigmoid()"), ("mul", "x.sigmoid() * 2")):
        n = node(gm, name)
        outer, inner = n.meta["source_stack"]
        assert pos(outer) == where(text, "helper(c)")
        assert outer.function == "forward"
        assert pos(inner) == where(text, needle)
        assert inner.function == "helper"
        assert n.meta["source"] == inner


def test_nested_submodule_stack_from_root(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    lin = node(gm, "middle_inner_lin")
    stack = lin.meta["source_stack"]
    assert [pos(s) for s in stack] == [
        where(text, "self.middle(d)"),
        where(text, "self.inner(x)"),
        where(text, "self.lin(x)"),
    ]
    assert [s.function for s in stack] == ["forward"] * 3
    tanh = node(gm, "tanh")
    assert pos(tanh.meta["source"]) == where(text, "self.lin(x).tanh()")
    assert tanh.meta["source_stack"][:2] == stack[:2]
    sub = node(gm, "sub")
    assert [pos(s) for s in sub.meta["source_stack"]] == [
        where(text, "self.middle(d)"),
        where(text, "self.inner(x) - 1"),
    ]


def test_non_ascii_text_before_the_expression(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    span = node(gm, "relu_1").meta["source"]
    line_text = text.splitlines()[span.line - 1]
    assert line_text == '        s = "é, ü"; \u03b1 = e.relu()'
    # bytes, not characters: each non-ASCII letter here takes two bytes
    assert span.col == len('        s = "é, ü"; \u03b1 = '.encode()) == 27
    assert span.col != line_text.index("e.relu()")
    assert pos(span) == where(text, "e.relu()")


def test_multi_line_expression(traced: tuple[Any, str, str]) -> None:
    gm, text, _ = traced
    add = node(gm, "add_1")
    assert pos(add.meta["source"]) == where(text, "torch.add(", end_needle="        )")
    assert add.meta["source"].end_line == add.meta["source"].line + 3
    # the parameter read inside the call has its own, inner span
    assert pos(node(gm, "w").meta["source"]) == where(text, "self.w,", end_needle="self.w")


def test_inputs_and_output_have_no_user_source(traced: tuple[Any, str, str]) -> None:
    gm, _, _ = traced
    assert "source" not in node(gm, "x").meta
    assert "source" not in node(gm, "output").meta


def test_spans_survive_deepcopy_and_interop(traced: tuple[Any, str, str]) -> None:
    import copy

    from fxcore.interop import from_torch_fx, to_torch_fx

    gm, _, _ = traced
    copied = copy.deepcopy(gm)
    assert node(copied, "relu_1").meta["source"] == node(gm, "relu_1").meta["source"]
    there = to_torch_fx(gm)
    back = from_torch_fx(there)
    assert node(back, "relu_1").meta["source"] == node(gm, "relu_1").meta["source"]


def test_verbose_code_names_source_lines(traced: tuple[Any, str, str]) -> None:
    gm, text, file = traced
    code = gm.graph.python_code("self", verbose=True).src
    line = where(text, "a.relu()")[0]
    assert f"# File: {file}:{line} in forward" in code
    assert f"# File: {file}:{where(text, 'x.sigmoid()')[0]} in helper" in code


def test_node_created_by_a_graph_pass_records_the_pass_line() -> None:
    g = fxcore.Graph()
    x = g.placeholder("x")
    expected_line = sys._getframe().f_lineno + 1
    neg = g.call_function(torch.neg, (x,))
    span = neg.meta["source"]
    assert span.file == __file__
    assert span.function == "test_node_created_by_a_graph_pass_records_the_pass_line"
    line_text = Path(__file__).read_text(encoding="utf-8").splitlines()[expected_line - 1]
    call = "g.call_function(torch.neg, (x,))"
    assert (span.line, span.end_line) == (expected_line, expected_line)
    assert (span.col, span.end_col) == (line_text.index(call), line_text.index(call) + len(call))
    assert neg.meta["source_stack"][-1] == span
    # a placeholder made by hand records the line that made it too
    assert x.meta["source"].line == expected_line - 2


def test_node_created_by_a_pass_on_a_traced_module(traced: tuple[Any, str, str]) -> None:
    import copy

    gm = copy.deepcopy(traced[0])
    relu = node(gm, "relu")
    with gm.graph.inserting_after(relu):
        expected_line = sys._getframe().f_lineno + 1
        extra = gm.graph.call_function(torch.abs, (relu,))
    assert extra.meta["source"].file == __file__
    assert extra.meta["source"].line == expected_line
    assert relu.meta["source"].file != __file__


def test_recording_can_be_switched_off() -> None:
    from fxcore import source

    g = fxcore.Graph()
    source.record_sources = False
    try:
        x = g.placeholder("x")
    finally:
        source.record_sources = True
    assert "source" not in x.meta


def test_span_serialisation() -> None:
    span = SourceSpan("m.py", 3, 4, 8, 2, "forward")
    assert SourceSpan.from_dict(span.to_dict()) == span
    assert str(span) == "m.py:3:8"


# -- the recovering trace ---------------------------------------------------------------------

RECOVERING = """
import torch
from torch import nn


class Raises(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x) * 2
        raise ValueError("no tracing here")


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.bad = Raises()
        self.good = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        while x.max() > 1:
            x = x / 2
        for row in x:
            x = x + row
        n = len(x)
        k = int(x.sum())
        for i in range(x.size(0)):
            x = x * i
        y = self.bad(x)
        return self.good(y) + n + k


class RootRaises(nn.Module):
    def forward(self, x):
        y = x.relu()
        z = y + {"a": 1}["b"]
        return z


class Loops(nn.Module):
    def forward(self, x):
        while x.sum() > 10:
            while x.mean() > 0:
                x = x - 1
        return x


class OnlyControlFlow(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class CustomLeaf(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class UsesLeaf(nn.Module):
    def __init__(self):
        super().__init__()
        self.leaf = CustomLeaf()

    def forward(self, x):
        return self.leaf(x) * 2


def length_of(x):
    return len(x)


def fn_with_len(x):
    return x[: length_of(x)]
"""


@pytest.fixture(scope="module")
def recovering(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, str]:
    return load_module(tmp_path_factory.mktemp("recovering"), RECOVERING)


def test_each_issue_kind_has_the_right_span(recovering: tuple[ModuleType, str]) -> None:
    module, text = recovering
    result = trace_collecting_issues(module.Branchy())
    got = [(i.kind, pos(i.span), i.conversion) for i in result.issues]
    assert got == [
        (IssueKind.CONTROL_FLOW, where(text, "x.sum() > 0"), None),
        (IssueKind.CONTROL_FLOW, where(text, "x.max() > 1"), None),
        # Python places the iteration at the whole for statement
        (IssueKind.ITERATION, where(text, "for row in x:", end_needle="x = x + row"), None),
        (IssueKind.PYTHON_VALUE, where(text, "len(x)"), "len"),
        (IssueKind.PYTHON_VALUE, where(text, "int(x.sum())"), "int"),
        (IssueKind.PYTHON_VALUE, where(text, "range(x.size(0))"), "index"),
        (IssueKind.EXCEPTION, where(text, 'raise ValueError("no tracing here")'), None),
    ]
    file = module.__file__
    assert all(i.span is not None and i.span.file == file for i in result.issues)
    assert result.issues[0].message == (
        "symbolically traced variables cannot be used as inputs to control flow"
    )


def test_exception_in_submodule_becomes_opaque_call(recovering: tuple[ModuleType, str]) -> None:
    module, text = recovering
    result = trace_collecting_issues(module.Branchy())
    assert result.partial is True
    assert result.opaque_modules == ["bad"]
    error = result.issues[-1]
    assert error.exception_type == "ValueError"
    assert error.message == "ValueError: no tracing here"
    assert error.module_path == "bad"
    assert error.after_recovery is True  # earlier issues' stand-ins may have caused it
    assert [pos(s) for s in error.stack] == [
        where(text, "self.bad(x)"),
        where(text, 'raise ValueError("no tracing here")'),
    ]
    gm = result.graph_module
    assert gm is not None
    calls = [(n.op, n.target) for n in gm.graph.nodes if n.op == "call_module"]
    assert calls == [("call_module", "bad"), ("call_module", "good")]
    # the nodes made inside the failed submodule (bad.lin, the * 2) are gone
    assert not any(str(n.target).startswith("bad.") for n in gm.graph.nodes)
    bad = node(gm, "bad")
    assert pos(bad.meta["source"]) == where(text, "self.bad(x)")
    gm.graph.lint()
    with pytest.raises(ValueError, match="no tracing here"):  # it runs for real, and raises
        gm(torch.randn(2, 4))


def test_exception_in_root_ends_the_trace(recovering: tuple[ModuleType, str]) -> None:
    module, text = recovering
    result = trace_collecting_issues(module.RootRaises())
    assert result.partial is True
    (issue,) = result.issues
    assert issue.kind is IssueKind.EXCEPTION
    assert issue.exception_type == "KeyError"
    assert issue.module_path == ""
    assert issue.after_recovery is False
    assert pos(issue.span) == where(text, '{"a": 1}["b"]')
    assert result.graph is not None
    assert [n.op for n in result.graph.nodes] == ["placeholder", "call_method", "output"]
    assert result.graph_module is not None
    assert result.graph_module(torch.ones(1)) is None  # the graph built so far, returning None


def test_loops_terminate_and_issues_are_not_repeated(recovering: tuple[ModuleType, str]) -> None:
    module, text = recovering
    result = trace_collecting_issues(module.Loops())
    assert [(i.kind, pos(i.span)) for i in result.issues] == [
        (IssueKind.CONTROL_FLOW, where(text, "x.sum() > 10")),
        (IssueKind.CONTROL_FLOW, where(text, "x.mean() > 0")),
    ]
    assert result.graph_module is not None


def test_consumed_values_are_marked(recovering: tuple[ModuleType, str]) -> None:
    module, _ = recovering
    result = trace_collecting_issues(module.OnlyControlFlow())
    assert result.graph is not None
    gt = next(n for n in result.graph.nodes if n.name == "gt")
    assert gt.meta["consumed_by_issue"] == "control_flow"
    assert "add" in [n.name for n in result.graph.nodes]  # the first branch is taken


def test_clean_trace_is_not_partial() -> None:
    result = trace_collecting_issues(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    assert result.issues == []
    assert result.partial is False
    assert result.graph_module is not None
    assert "seq" not in result.graph_module.code
    plain = fxcore.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    assert result.graph_module.code == plain.code


def test_leaf_modules_by_name(recovering: tuple[ModuleType, str]) -> None:
    module, _ = recovering
    result = trace_collecting_issues(module.UsesLeaf(), leaf_modules=("CustomLeaf",))
    assert result.issues == []
    assert [n.op for n in result.graph.nodes] == [  # type: ignore[union-attr]
        "placeholder",
        "call_module",
        "call_function",
        "output",
    ]
    qualified = f"{module.__name__}.CustomLeaf"
    assert trace_collecting_issues(module.UsesLeaf(), leaf_modules=(qualified,)).issues == []
    assert len(trace_collecting_issues(module.UsesLeaf()).issues) == 1


def test_autowrap_functions(recovering: tuple[ModuleType, str]) -> None:
    module, _ = recovering
    assert trace_collecting_issues(module.fn_with_len).issues[0].conversion == "len"
    wrapped = trace_collecting_issues(module.fn_with_len, autowrap_functions=(module.length_of,))
    assert wrapped.issues == []
    assert wrapped.graph_module is not None
    torch.testing.assert_close(wrapped.graph_module(torch.arange(3.0)), torch.arange(3.0))


def test_concrete_args_are_passed_through(recovering: tuple[ModuleType, str]) -> None:
    class Flag(torch.nn.Module):
        def forward(self, x: torch.Tensor, flag: bool) -> torch.Tensor:
            return x + 1 if flag else x - 1

    result = trace_collecting_issues(Flag(), concrete_args={"flag": False})
    assert result.issues == []
    assert "sub" in [n.name for n in result.graph.nodes]  # type: ignore[union-attr]


def test_max_issues_stops_the_trace() -> None:
    def many(x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            x = x + 1
        if x.sum() > 1:
            x = x + 2
        if x.sum() > 2:
            x = x + 3
        return x

    result = trace_collecting_issues(many, max_issues=2)
    assert len(result.issues) == 2
    assert result.partial is True


@pytest.mark.parametrize("name", ["Branchy", "RootRaises", "Loops", "OnlyControlFlow", "UsesLeaf"])
def test_symbolic_trace_still_raises_like_torch_fx(
    recovering: tuple[ModuleType, str], name: str
) -> None:
    module, _ = recovering
    cls = getattr(module, name)
    with pytest.raises(Exception) as theirs:
        torch.fx.symbolic_trace(cls())
    with pytest.raises(Exception) as ours:
        fxcore.symbolic_trace(cls())
    assert type(ours.value).__name__ == type(theirs.value).__name__
    assert str(ours.value) == str(theirs.value)
    # and a recovering trace before or after does not change that
    trace_collecting_issues(cls())
    with pytest.raises(type(ours.value)):
        fxcore.symbolic_trace(cls())


def test_symbolic_trace_after_recovering_trace_is_clean(
    recovering: tuple[ModuleType, str],
) -> None:
    module, _ = recovering
    trace_collecting_issues(module.Branchy())
    assert torch.nn.Module.__call__ is fxcore._symbolic_trace._orig_module_call
    lin = torch.nn.Linear(2, 2)
    assert fxcore.symbolic_trace(lin).code == torch.fx.symbolic_trace(lin).code
