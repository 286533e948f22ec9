"""The export tracer: each built instance through the real ``torch.export.export`` on its
example inputs, every failure at the user's line (FX2xx).

One export answers whether the module exports; it stops at the first failure. When it
fails, ``draft_export`` (non-strict) runs on: it decides each data-dependent guard from
the real values and reports every one it met, so the user sees all of them at once
rather than one per fix. Its own crash (it propagates real tensors through code written
for fake ones) is one more failure where it differs from the first (e.g. an operator whose
output size depends on the data, met past the guard export stopped at).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic
from fxls.analysis.pipeline.file_context import SourceFile
from fxls.analysis.pipeline.target_graphs import target_graph
from fxls.analysis.pipeline.target_inputs import TargetRun
from fxls.analysis.pipeline.torch_words import first_sentence
from fxls.analysis.pipeline.user_frames import (
    Location,
    library_expression,
    locate,
    returned_span,
    span_text,
    spans_of_exception,
    spans_of_structured,
)
from fxls.analysis.torch_warmth.graph_data import Undescribable, describe
from fxls.report import Diagnostic, TargetGraph

EXPORTED = "exported"


@dataclass(frozen=True)
class ExportFailure:
    """One reason the module does not export, before it is worded."""

    code: str
    what: str  # torch's words, first line
    spans: tuple[SourceSpan, ...]
    #: raised while flattening what ``forward`` returned (no frame of the user's)
    in_outputs: bool = False


@dataclass(frozen=True)
class ExportOutcome:
    """The module's export status, its failures as diagnostics, and the graph export made
    (draft_export's where export failed and it made one)."""

    status: str
    found: list[Diagnostic]
    graph: TargetGraph | None = None
    #: the exported graph as data, for warming the next job's caches (``torch_warmth``)
    described: list[Any] = field(default_factory=list)


def export_module(run: TargetRun, file: SourceFile, strict: bool,
                  dynamic_shapes: Any = None) -> ExportOutcome:
    try:
        program = torch.export.export(run.instance, run.inputs, run.kwargs or None,
                                      dynamic_shapes=dynamic_shapes, strict=strict)
        return ExportOutcome(EXPORTED, [], _graph_of(program, file),
                             _described(program) if not strict else [])
    except Exception as error:  # the user's code or torch failed: that is the finding
        failures = [_failure_of(error)]
    drafted = None
    if not strict:
        more, drafted = _drafted(run, file, dynamic_shapes)  # the first has exact columns
        failures += more
    found = _unique(_placed([_worded(failure, run, file) for failure in failures], run))
    return ExportOutcome(_failed(len(found)), _one_per_range(found, run),
                         _graph_of(drafted, file, drafted=True))


def _graph_of(program: Any, file: SourceFile, drafted: bool = False) -> TargetGraph | None:
    """The rows of the program's graph; none when reading them fails (torch's graph is odd
    in a way fxls did not foresee: the export's own findings must still be reported)."""
    if program is None:
        return None
    try:
        return target_graph(program.graph_module, file, drafted=drafted)
    except Exception:
        return None


def _described(program: Any) -> list[Any]:
    from torch.export.graph_signature import InputKind
    kinds = {spec.arg.name: {InputKind.PARAMETER: "param", InputKind.BUFFER: "buffer"}.get(
        spec.kind, "input") for spec in program.graph_signature.input_specs
        if hasattr(spec.arg, "name")}
    try:
        return describe(program.graph_module, kinds)
    except (Undescribable, KeyError):
        return []


def _failed(count: int) -> str:
    return f"failed: {count} problem{'s' if count != 1 else ''}"


def _failure_of(error: Exception) -> ExportFailure:
    from torch._subclasses.fake_tensor import DynamicOutputShapeException
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    what = (f"guard `{error.cond}`" if isinstance(error, GuardOnDataDependentSymNode)
            else f"the output size of `{error.func}` depends on the data"
            if isinstance(error, DynamicOutputShapeException) else first_sentence(error))
    return ExportFailure(_code_of(error), what, tuple(spans_of_exception(error)),
                         _in_outputs(error))


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
    if isinstance(error, GuardOnDataDependentSymNode | DynamicOutputShapeException):
        return "FX201"
    if isinstance(error, Unsupported):
        return "FX202"
    if isinstance(error, UnsupportedOperatorException) or _missing_fake_kernel(error):
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


def _in_outputs(error: Exception) -> bool:
    """Raised by export's flattening of the outputs (``flat_fn`` of aot_autograd): a value
    it cannot flatten, such as transformers' ``DynamicCache``, returned by ``forward``."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    code = tb.tb_frame.f_code
    return code.co_name == "flat_fn" and "_aot_autograd" in code.co_filename


_DRAFT_CODES = {"DATA_DEPENDENT_ERROR": "FX201", "GUARD_ADDED": "FX205",
                "MISSING_FAKE_KERNEL": "FX203", "MISMATCHED_FAKE_KERNEL": "FX203"}


def _drafted(run: TargetRun, file: SourceFile,
             dynamic_shapes: Any) -> tuple[list[ExportFailure], Any]:
    """Every failure ``draft_export`` met and the program it made; none when it crashed
    itself."""
    from torch._logging.structured import INTERN_TABLE
    from torch.export import draft_export
    try:
        program = draft_export(run.instance, run.inputs, run.kwargs or None,
                               dynamic_shapes=dynamic_shapes)
    except Exception as error:  # one more failure (the same as export's: dropped as such)
        return [_failure_of(error)], None
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
    return failures, program


@dataclass(frozen=True)
class _Kind:
    """How a failure kind is said: what failed at ``{text}``, why, and what to do. Several
    failures at one place are listed by what failed; why and what to do are said once."""

    what_failed: str
    why: str = ""  # after "it" (one failure) or "each" (several)
    hint: str = ""

    def alone(self, subject: str) -> str:
        return self.what_failed.format(text=subject) + (
            f": it {self.why}" if self.why else "") + (f" ({self.hint})" if self.hint else "")

    def after_several(self) -> str:
        return (f"; each {self.why}" if self.why else "") + (f"; {self.hint}" if self.hint
                                                             else "")


_KINDS = {
    "FX201": _Kind("export cannot decide {text}",
                   "depends on a tensor's values, which export does not know",
                   "use `torch.cond` for a branch, `torch._check` for an assumption"),
    "FX202": _Kind("strict export cannot trace {text}"),
    "FX203": _Kind("{text} calls an operator with no fake kernel, which export needs",
                   hint="register one with `register_fake`"),
    "FX205": _Kind("{text} specializes a dimension declared dynamic"),
    "FX209": _Kind("exporting raised at {text}"),
}


@dataclass(frozen=True)
class _Worded:
    """A failure as a diagnostic, and what a message listing several at its place says of
    it (``clause``)."""

    item: Diagnostic
    #: what tells it from another reached from the same line of the user's: torch's words
    #: when it is inside a library, None at the user's expression
    inside: str | None
    clause: str


def _worded(failure: ExportFailure, run: TargetRun, file: SourceFile) -> _Worded:
    if failure.in_outputs:
        returned = returned_span(file, run.name)
        if returned is not None:
            return _Worded(_returned_diagnostic(failure, returned, run, file), None,
                           f"export cannot flatten what `forward` returns ({failure.what})")
    where = locate(failure.spans, file, run.span)
    subject = _subject(where, file)
    message = f"{_KINDS[failure.code].alone(subject)} ({failure.what}; exporting `{run.name}`)"
    item = diagnostic(failure.code, message, where.span, run.name)
    item.related.extend(where.related)
    clause = f"{_KINDS[failure.code].what_failed.format(text=subject)} ({failure.what})"
    return _Worded(item, failure.what if where.library is not None else None, clause)


def _subject(where: Location, file: SourceFile) -> str:
    """The expression that failed, or the library function the user's line called into."""
    if where.library is not None:  # the user's line called into it: name where it failed
        inner = library_expression(where, file)
        return (f"`{inner}` in `{where.library}`" if inner else f"`{where.library}`") + \
            " (reached from here)"
    text = span_text(where.span, file)
    return f"`{text}`" if text else "this"


def _returned_diagnostic(failure: ExportFailure, returned: SourceSpan, run: TargetRun,
                         file: SourceFile) -> Diagnostic:
    message = (f"export cannot flatten what `forward` returns, `{span_text(returned, file)}`: "
               "return tensors (or containers of them), or register the other classes as "
               f"pytree nodes ({failure.what}; exporting `{run.name}`)")
    return diagnostic(failure.code, message, returned, run.name)


def _placed(found: list[_Worded], run: TargetRun) -> list[_Worded]:
    """Without a failure left at the class for want of a user frame when the same kind
    is found at a line (export's exception has no frame where draft's report has one)."""
    at_class = (run.span.file, run.span.line)
    placed = {said.item.code for said in found
              if (said.item.span.file, said.item.span.line) != at_class}
    return [said for said in found
            if (said.item.span.file, said.item.span.line) != at_class
            or said.item.code not in placed]


def _unique(found: Iterable[_Worded]) -> list[_Worded]:
    """One per (code, line): draft_export meets the first failure again. Failures inside a
    library reached from one line of the user's differ by torch's words (two guards)."""
    seen, kept = set(), []
    for said in found:
        key = (said.item.code, said.item.span.file, said.item.span.line, said.inside)
        if key not in seen:
            seen.add(key)
            kept.append(said)
    return kept


def _one_per_range(found: list[_Worded], run: TargetRun) -> list[Diagnostic]:
    """One diagnostic per (code, range), listing each failure reached from there."""
    by_range: dict[tuple[str, tuple[str, int, int, int, int]], list[_Worded]] = {}
    for said in found:
        by_range.setdefault((said.item.code, said.item.span.key()), []).append(said)
    merged = []
    for at_range in by_range.values():
        first = at_range[0].item
        if len(at_range) > 1:
            first.message = _several(at_range, run.name)
            for said in at_range[1:]:
                first.related.extend(said.item.related)
        merged.append(first)
    return merged


def _several(at_range: list[_Worded], name: str) -> str:
    """``2 problems here (exporting `M`): (1) ...; (2) ...; each ...; use ...``."""
    listed = "; ".join(f"({number}) {said.clause}" for number, said in enumerate(at_range, 1))
    kind = _KINDS.get(at_range[0].item.code)
    return f"{len(at_range)} problems here (exporting `{name}`): {listed}" + (
        kind.after_several() if kind is not None else "")
