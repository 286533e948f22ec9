"""A file's report: the data (``model``) and its one decoder from the wire (``wire``)."""

from fxls.report.model import (
    BreakInfo,
    CallInfo,
    Diagnostic,
    FileReport,
    ModuleReport,
    NodeInfo,
    NodeOp,
    PassGraphRun,
    PassReport,
    RelatedInfo,
    Span,
    TargetGraph,
    TargetGraphs,
    TraceStatus,
)
from fxls.report.wire import (
    MAX_DIAGNOSTICS,
    CheckedReport,
    InvalidReport,
    SentAhead,
    check_report,
    suspect_line,
)

__all__ = [
    "MAX_DIAGNOSTICS",
    "BreakInfo",
    "CallInfo",
    "CheckedReport",
    "Diagnostic",
    "FileReport",
    "InvalidReport",
    "ModuleReport",
    "NodeInfo",
    "NodeOp",
    "PassGraphRun",
    "PassReport",
    "RelatedInfo",
    "SentAhead",
    "Span",
    "TargetGraph",
    "TargetGraphs",
    "TraceStatus",
    "check_report",
    "suspect_line",
]
