"""Server building blocks that need no worker: settings, lookups, hover text, shape hints."""

from __future__ import annotations

import sys

from fxls.report import FileReport, ModuleReport, NodeInfo, Span
from fxls.server.config import ServerConfig
from fxls.server.hover import module_markdown, nodes_markdown
from fxls.server.inlay import shape_hints
from fxls.server.report_lookup import module_at, nodes_at

PATH = "/proj/model.py"
TEXT = (
    "class Net(nn.Module):\n"
    "    def forward(self, x):\n"
    "        h = self.fc(x).relu()\n"
    "        return h\n"
)


def _node(name: str, op: str, target: str, line: int, col: int, end_col: int, **kw) -> NodeInfo:
    return NodeInfo(
        name=name,
        op=op,
        target=target,
        args="(x,)",
        kwargs="{}",
        users=kw.pop("users", []),
        span=Span(PATH, line, line, col, end_col),
        **kw,
    )


def _report() -> FileReport:
    fc = _node(
        "fc",
        "call_module",
        "fc",
        3,
        12,
        22,
        users=["relu"],
        shape=[2, 4],
        dtype="torch.float32",
        module_type="torch.nn.Linear",
        module_params=36,
    )
    relu = _node(
        "relu",
        "call_method",
        "relu",
        3,
        12,
        29,
        users=["output"],
        shape=[2, 4],
        dtype="torch.float32",
        backward="ReluBackward0",
    )
    module = ModuleReport("Net", "traced", 4, Span(PATH, 1, 1, 6, 9), [fc, relu], "def forward")
    return FileReport(PATH, [module], [])


def test_config_accepts_nested_and_flat_forms_and_ignores_wrong_types() -> None:
    config = ServerConfig().updated(
        {"fxls": {"trace": {"onSave": False, "timeout": 3}, "diagnostics.ignore": ["FX013"]}}
    )
    assert (config.trace_on_save, config.trace_timeout, config.ignore) == (False, 3.0, ["FX013"])
    config = config.updated({"inlayHints.shapes": "yes", "python": ""})
    assert config.inlay_hints_shapes is True  # a string is not a bool: ignored
    assert config.python == sys.executable


def test_hover_lookup_picks_the_innermost_expression() -> None:
    report = _report()
    inner = nodes_at(report, PATH, 3, 14)  # inside `self.fc(x)`
    assert [n.name for _, n in inner] == ["fc"]
    outer = nodes_at(report, PATH, 3, 26)  # on `.relu()`
    assert [n.name for _, n in outer] == ["relu"]
    assert nodes_at(report, "/other.py", 3, 14) == []
    assert module_at(report, 1, 7).name == "Net"


def test_hover_markdown_shows_node_facts() -> None:
    report = _report()
    text = nodes_markdown(nodes_at(report, PATH, 3, 14))
    for fact in ("**fc**", "call_module", "`torch.nn.Linear`, 36 parameters", "`float32[2, 4]`"):
        assert fact in text
    text = nodes_markdown(nodes_at(report, PATH, 3, 26))
    assert "backward: `ReluBackward0`" in text and "users: `output`" in text
    assert "**Net** — traced · 4 nodes" in module_markdown(report.modules[0])


def test_shape_hint_goes_after_the_assigned_name() -> None:
    assert shape_hints(_report(), PATH, TEXT) == [(3, 9, ": [2, 4]")]
