"""Each quick fix's source edit, exactly (verification by re-tracing is tested end to end)."""

from __future__ import annotations

from fxls.fixes import apply_edits, fixes_for
from fxls.project.source_text import SourceText
from fxls.report import Diagnostic, Span


def _span_of(source: str, needle: str, occurrence: int = 0) -> Span:
    lines = SourceText(source).lines()
    seen = 0
    for number, line in enumerate(lines, 1):
        raw = line.encode()
        start = raw.find(needle.encode())
        while start >= 0:
            if seen == occurrence:
                return Span("m.py", number, number, start, start + len(needle.encode()))
            seen += 1
            start = raw.find(needle.encode(), start + 1)
    raise AssertionError(f"{needle!r} not in source")


def _fix(
    source: str, code: str, needle: str, module: str = "Net", occurrence: int = 0, **data
) -> list[str]:
    span = _span_of(source, needle, occurrence)
    diagnostic = Diagnostic(code, "error", "m", span, module, data=data)
    return [apply_edits(source, fix.edits) for fix in fixes_for(source, diagnostic)]


HEAD = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"


def test_fx010_removes_the_dead_statement() -> None:
    src = (
        HEAD
        + "class Net(nn.Module):\n    def forward(self, x):\n"
        + "        y = x * 2  # é\n        return x\n"
    )
    (fixed,) = _fix(src, "FX010", "x * 2")
    assert fixed == HEAD + "class Net(nn.Module):\n    def forward(self, x):\n        return x\n"


def test_fx013_removes_print_and_keeps_the_block_valid() -> None:
    src = HEAD + "def f(x):\n    if True:\n        print('tracing', x.shape)\n    return x\n"
    (fixed,) = _fix(src, "FX013", "print('tracing', x.shape)")
    assert "        pass\n" in fixed and "print" not in fixed


def test_fx011_out_of_place_method_and_inplace_kwarg() -> None:
    src = HEAD + "def f(x):\n    x.add_(1)\n    return F.relu(x, inplace=True)\n"
    (fixed,) = _fix(src, "FX011", "x.add_(1)")
    assert "    x = x.add(1)\n" in fixed
    (fixed,) = _fix(src, "FX011", "F.relu(x, inplace=True)")
    assert "return F.relu(x)\n" in fixed


def test_fx001_assert_becomes_torch_assert() -> None:
    src = HEAD + "def f(x):\n    assert x.dim() == 2, 'need 2-d'\n    return x\n"
    fixes = _fix(src, "FX001", "x.dim() == 2")
    assert "    torch._assert(x.dim() == 2, 'need 2-d')\n" in fixes[0]


def test_fx001_if_else_assignment_becomes_where() -> None:
    src = HEAD + (
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            y = x.relu()\n        else:\n            y = -x\n"
        "        return y\n"
    )
    fixes = _fix(src, "FX001", "x.sum() > 0")
    assert "        y = torch.where(x.sum() > 0, x.relu(), -x)\n        return y\n" in fixes[0]


def test_fx001_ternary_becomes_where() -> None:
    src = HEAD + "def f(x):\n    return x if x.mean() > 0 else x * 0\n"
    (fixed, *_) = _fix(src, "FX001", "x.mean() > 0")
    assert "    return torch.where(x.mean() > 0, x, x * 0)\n" in fixed


def test_fx003_len_and_int_of_size_stay_symbolic() -> None:
    src = HEAD + "def f(x):\n    n = len(x)\n    m = int(x.size(1))\n    return x.view(n, m)\n"
    fixed = _fix(src, "FX003", "len(x)")
    assert "    n = x.size(0)\n" in fixed[0]
    fixed = _fix(src, "FX003", "int(x.size(1))")
    assert "    m = x.size(1)\n" in fixed[0]


def test_fx001_in_helper_function_offers_wrap_and_in_submodule_offers_leaf() -> None:
    src = HEAD + (
        "def gate(x):\n    if x.sum() > 0:\n        return x\n    return -x\n\n\n"
        "class Inner(nn.Module):\n    def forward(self, x):\n        if x.max() > 1:\n"
        "            return x\n        return x\n"
    )
    wrapped = _fix(src, "FX001", "x.sum() > 0", module="Outer")
    assert any('torch.fx.wrap("gate")' in text for text in wrapped)
    leaf = _fix(src, "FX001", "x.max() > 1", module="Outer")
    assert any("# fxls: leaf\nclass Inner(nn.Module):" in text for text in leaf)


def test_fx001_on_a_flag_argument_offers_concrete() -> None:
    src = HEAD + (
        "class Net(nn.Module):\n    def forward(self, x, scale=True):\n"
        "        if scale:\n            x = x * 2\n        return x\n"
    )
    texts = _fix(src, "FX001", "scale", occurrence=1)
    assert any("# fxls: concrete {'scale': True}\nclass Net" in t for t in texts)


def test_fx101_init_stub_from_the_signature() -> None:
    src = HEAD + (
        "class Net(nn.Module):\n    def __init__(self, d_in: int, p: float, act=None):\n"
        "        super().__init__()\n"
    )
    (fixed,) = _fix(src, "FX101", "Net")
    assert "# fxls: init d_in=8, p=0.1\nclass Net(nn.Module):" in fixed


def test_fx012_constant_becomes_a_buffer() -> None:
    src = HEAD + (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        mask = torch.ones(4, 4).triu()\n"
        "        return x * mask\n"
    )
    (fixed,) = _fix(src, "FX012", "torch.ones(4, 4).triu()")
    assert (
        '        super().__init__()\n        self.register_buffer("mask", '
        "torch.ones(4, 4).triu(), persistent=False)\n" in fixed
    )
    assert "        mask = self.mask\n" in fixed


def test_fx020_replaces_the_match() -> None:
    src = HEAD + "def f(x):\n    return x * torch.sigmoid(x)\n"
    (fixed,) = _fix(src, "FX020", "x * torch.sigmoid(x)", replacement="F.silu(x)", rule="silu")
    assert "    return F.silu(x)\n" in fixed


def test_no_fix_when_the_span_matches_nothing() -> None:
    src = HEAD + "def f(x):\n    return x\n"
    assert _fix(src, "FX010", "return") == []


def test_fix_edits_the_right_line_after_a_unicode_line_separator_in_a_string() -> None:
    src = HEAD + "def f(x):\n    s = 'a\u2028b'\n    y = x * 2\n    return x\n"
    span = Span("m.py", 8, 8, 8, 13)  # `x * 2`
    assert src.split("\n")[7][4:13] == "y = x * 2"
    (fix,) = fixes_for(src, Diagnostic("FX010", "warning", "m", span, "Net"))
    assert apply_edits(src, fix.edits) == (
        HEAD + "def f(x):\n    s = 'a\u2028b'\n    return x\n")
