"""A file's report: the data (``model``) and its one decoder from the wire (``wire``)."""

from fxls.report.model import (
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
    "TraceStatus",
    "check_report",
    "suspect_line",
]
