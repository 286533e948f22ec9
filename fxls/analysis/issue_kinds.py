"""How each kind of problem a recovering trace records (fxcore's ``IssueKind``) is
reported: its code, its message at the user's expression, its message when the construct
is inside library code, and the words for that library line.

One record per kind: a new kind (or a new tracer's kinds) is one entry, not a branch in
several chains."""

from __future__ import annotations

from dataclasses import dataclass

from fxcore.recovering import IssueKind, TraceIssue


@dataclass(frozen=True)
class IssueKindReporting:
    code: str
    #: the message at the user's own expression; ``{quoted}`` is its text in backquotes
    at_user_code: str
    #: the message at the user's line when the construct is in a library; ``{where}`` says
    #: where it really is
    in_library: str
    #: the related information at that library line
    site_words: str
    #: Python's positions for a bare-name condition cover the whole statement: narrow them
    narrows_to_condition: bool = False
    #: added to ``at_user_code`` for an issue that followed an earlier recovered one
    after_recovery: str = ""

    def message(self, issue: TraceIssue, quoted: str, module: str) -> str:
        text = self.at_user_code.format(quoted=quoted, conversion=issue.conversion,
                                        message=issue.message, module=module)
        return text + self.after_recovery if issue.after_recovery else text

    def library_message(self, issue: TraceIssue, where: str, module: str) -> str:
        return self.in_library.format(where=where, conversion=issue.conversion,
                                      message=issue.message, module=module)


REPORTING: dict[IssueKind, IssueKindReporting] = {
    IssueKind.CONTROL_FLOW: IssueKindReporting(
        "FX001",
        "{quoted} depends on a traced value and decides control flow: symbolic tracing cannot "
        "follow a data-dependent branch",
        "a data-dependent branch {where}: symbolic tracing cannot follow it; trace that "
        "function or module as a leaf (`autowrap_functions` / `leaf_modules` in [tool.fxls])",
        "the data-dependent branch",
        narrows_to_condition=True,
    ),
    IssueKind.ITERATION: IssueKindReporting(
        "FX002",
        "{quoted} iterates over a traced value: its length is unknown while tracing",
        "an iteration over a traced value {where}: its length is unknown while tracing",
        "the iteration over a traced value",
    ),
    IssueKind.PYTHON_VALUE: IssueKindReporting(
        "FX003",
        "{quoted} turns a traced value into a Python value ({conversion}): tensors have no "
        "concrete value while tracing",
        "a traced value turned into a Python value ({conversion}) {where}: tensors have no "
        "concrete value while tracing",
        "the conversion to a Python value",
    ),
    IssueKind.EXCEPTION: IssueKindReporting(
        "FX004",
        "{message} (raised while tracing `{module}`)",
        "{message} ({where}, while tracing `{module}`)",
        "raised here",
        after_recovery="; it may follow from an earlier problem in this forward",
    ),
}
