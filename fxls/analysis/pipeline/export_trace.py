"""The export tracer: each built instance through the real ``torch.export.export`` on its
example inputs, every failure at the user's line (FX2xx).

One export answers whether the module exports; it stops at the first failure. When it
fails, ``draft_export`` (non-strict) runs on: it decides each data-dependent guard from
the real values and reports every one it met, so the user sees all of them at once
rather than one per fix. Its own crash (it propagates real tensors through code written
for fake ones) costs only its extra findings: the first failure is always reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.target_inputs import TargetRun
from fxls.analysis.pipeline.user_frames import (
    Location,
    locate,
    span_text,
    spans_of_exception,
    spans_of_structured,
)
from fxls.report import Diagnostic

EXPORTED = "exported"


@dataclass(frozen=True)
class ExportFailure:
    """One reason the module does not export, before it is worded."""

    code: str
    what: str  # torch's words, first line
    spans: tuple[SourceSpan, ...]


def export_module(run: TargetRun, file: SourceFile, strict: bool,
                  dynamic_shapes: Any = None) -> tuple[str, list[Diagnostic]]:
    """The module's export status and its failures as diagnostics."""
    try:
        torch.export.export(run.instance, run.inputs, dynamic_shapes=dynamic_shapes,
                            strict=strict)
        return EXPORTED, []
    except Exception as error:  # the user's code or torch failed: that is the finding
        failures = [_failure_of(error)]
    if not strict:
        failures += _drafted(run, file, dynamic_shapes)  # the first has exact columns
    found = _unique(_placed([_worded(failure, run, file) for failure in failures], run))
    return _failed(len(found)), found


def _failed(count: int) -> str:
    return f"failed: {count} problem{'s' if count != 1 else ''}"


def _failure_of(error: Exception) -> ExportFailure:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    what = (f"guard `{error.cond}`" if isinstance(error, GuardOnDataDependentSymNode)
            else _first_line(error))
    return ExportFailure(_code_of(error), what, tuple(spans_of_exception(error)))


def _code_of(error: Exception) -> str:
    """The failure kind, from the exception's class (torch's, never its text)."""
    from torch._dynamo.exc import Unsupported, UserError, UserErrorType
    from torch._subclasses.fake_tensor import (
        DynamicOutputShapeException,
        UnsupportedOperatorException,
    )
    from torch.fx.experimental.symbolic_shapes import (
        ConstraintViolationError,
        GuardOnDataDependentSymNode,
    )
    if isinstance(error, GuardOnDataDependentSymNode):
        return "FX201"
    if isinstance(error, Unsupported):
        return "FX202"
    if isinstance(error, UnsupportedOperatorException | DynamicOutputShapeException) or (
            _missing_fake_kernel(error)):
        return "FX203"
    if isinstance(error, ConstraintViolationError) or (
            isinstance(error, UserError)
            and error.error_type is UserErrorType.CONSTRAINT_VIOLATION):
        return "FX205"
    return "FX209"


def _missing_fake_kernel(error: Exception) -> bool:
    """A custom op with no fake kernel: torch raises a plain RuntimeError from the op's
    fake-kernel stand-in (a ``fake_impl`` of ``torch/_library/``), the traceback's last frame."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    code = tb.tb_frame.f_code
    in_library = "torch/_library/" in code.co_filename.replace("\\", "/")
    return in_library and "fake_impl" in (code.co_name, Path(code.co_filename).stem)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0].split(". ")[0].rstrip(".") if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


_DRAFT_CODES = {"DATA_DEPENDENT_ERROR": "FX201", "GUARD_ADDED": "FX205",
                "MISSING_FAKE_KERNEL": "FX203", "MISMATCHED_FAKE_KERNEL": "FX203"}


def _drafted(run: TargetRun, file: SourceFile, dynamic_shapes: Any) -> list[ExportFailure]:
    """Every failure ``draft_export`` met; none when it crashed itself."""
    from torch._logging.structured import INTERN_TABLE
    from torch.export import draft_export
    try:
        program = draft_export(run.instance, run.inputs, dynamic_shapes=dynamic_shapes)
    except Exception:
        return []
    file_names = {number: name for name, number in INTERN_TABLE.items()}
    failures = []
    for failure in getattr(getattr(program, "_report", None), "failures", ()):
        code = _DRAFT_CODES.get(str(failure.failure_type))
        data = failure.data if isinstance(failure.data, dict) else {}
        if code is None or (code == "FX205" and dynamic_shapes is None):
            continue  # a guard on a static shape is what export does, not a failure
        stack = data.get("user_stack") or []
        what = (f"guard `{data['expr']}`" if "expr" in data
                else f"no fake kernel for `{data.get('op', '?')}`")
        spans = spans_of_structured(stack, file_names, file)
        failures.append(ExportFailure(code, what, tuple(spans)))
    return failures


def _worded(failure: ExportFailure, run: TargetRun, file: SourceFile) -> Diagnostic:
    where = locate(failure.spans, file, run.span)
    return _diagnostic(failure, where, run, file)


def _diagnostic(failure: ExportFailure, where: Location, run: TargetRun,
                file: SourceFile) -> Diagnostic:
    reached = (f" inside `{where.library}`, reached from here" if where.library is not None
               else "")
    text = span_text(where.span, file)
    title = _TITLES[failure.code].format(text=f"`{text}`" if text else "this")
    message = f"{title}{reached} ({failure.what}; exporting `{run.name}`)"
    item = diagnostic(failure.code, message, where.span, run.name)
    item.related.extend(where.related)
    return item


_TITLES = {
    "FX201": "export cannot decide {text}: it depends on a tensor's values, which export "
             "does not know (use `torch.cond` for a branch, `torch._check` for an assumption)",
    "FX202": "strict export cannot trace {text}",
    "FX203": "{text} calls an operator with no fake kernel, which export needs "
             "(register one with `register_fake`)",
    "FX205": "{text} specializes a dimension declared dynamic",
    "FX209": "exporting raised at {text}",
}


def _placed(found: list[Diagnostic], run: TargetRun) -> list[Diagnostic]:
    """Without a failure left at the class for want of a user frame when the same kind
    is found at a line (export's exception has no frame where draft's report has one)."""
    at_class = (run.span.file, run.span.line)
    placed = {item.code for item in found if (item.span.file, item.span.line) != at_class}
    return [item for item in found
            if (item.span.file, item.span.line) != at_class or item.code not in placed]


def _unique(found: Iterable[Diagnostic]) -> list[Diagnostic]:
    """One diagnostic per (code, line): draft_export meets the first failure again."""
    seen, kept = set(), []
    for item in found:
        key = (item.code, item.span.file, item.span.line)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept
