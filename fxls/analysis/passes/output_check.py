"""What a pass's result computes: run on its graph's example inputs beside the graph before
the pass (both with the realistic values of ``module_copies``), FX017 where the outputs
differ and FX004 where the result cannot run at all, at the pass line that made the node
that raised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.passes.checks import EXPORT_SUFFIX, Where, in_graph
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.passes.edits import EditKind, EditLog
from fxls.analysis.passes.module_copies import realistic_copy
from fxls.analysis.passes.user_objects import attribute
from fxls.report import Diagnostic, PassGraphRun, RelatedInfo

#: a pass whose outputs differ by more than this (relative to the outputs' scale) is FX017
_OUTPUT_TOLERANCE = 1e-4
#: edits that make a node compute what it computes (a move does not)
_SHAPING = (EditKind.CREATE, EditKind.COPY, EditKind.REWIRE, EditKind.RETARGET)


@dataclass(slots=True)
class Outcome:
    """A pass run that completed cleanly, kept for the check of what its result computes."""

    spec: PassSpec
    subject: Any  # runner.Subject
    result: Any
    log: EditLog
    where: Where
    #: what the report says of the run (the shapes of its nodes are added after the check)
    run: PassGraphRun | None = None


def compare_outputs(outcomes: list[Outcome]) -> list[Diagnostic]:
    """FX017 for a pass that changes the model's outputs on its example inputs; FX004 for
    one whose result raises on them (where the graph before the pass did not)."""
    found = []
    expected: dict[int, list[Any] | None] = {}  # each model's outputs, computed once
    for outcome in outcomes:
        inputs = outcome.subject.example_inputs()
        module = attribute(outcome.result, "graph_module", outcome.result)
        if inputs is None or not isinstance(module, torch.nn.Module):
            continue
        key = id(outcome.subject)
        if key not in expected:
            subject = outcome.subject
            reference = realistic_copy(subject.graph_module, subject.instance)
            expected[key] = run_outputs(reference, inputs)[0]
        outputs = expected[key]
        if outputs is not None:
            found.extend(compared(outcome, outputs, module, inputs))
    return found


def compared(outcome: Outcome, expected: list[Any], module: Any, inputs: tuple[Any, ...]
              ) -> list[Diagnostic]:
    """FX017 when ``module``'s outputs on ``inputs`` differ from ``expected`` (the model's
    before the pass), FX004 at the pass line when the result raises on them."""
    got, error = run_outputs(module, inputs)
    if error is not None:
        raised = _result_raises(outcome, module, inputs, error)
        return [raised] if raised is not None else []
    difference = _max_difference(expected, got)
    if difference is None:
        return []
    spec, label = outcome.spec, outcome.subject.label
    item = diagnostic(
        "FX017", f"`{spec.name}` changes the outputs of {_named(label)} on its example inputs: "
        f"the largest absolute difference is {difference:.3g}", spec.span, spec.name,
        graph=label, difference=difference)
    item.data["pass"] = spec.name
    return [item]


def _named(label: str) -> str:
    """`` `Net` ``, or ``the export graph of `Net` ``."""
    if label.endswith(EXPORT_SUFFIX):
        return f"the export graph of `{label.removesuffix(EXPORT_SUFFIX)}`"
    return f"`{label}`"


def run_outputs(module: Any, inputs: tuple[Any, ...]) -> tuple[list[Any] | None,
                                                          Exception | None]:
    """``module``'s flattened outputs on ``inputs`` (seeded, no grad), or what it raised."""
    from torch.utils._pytree import tree_flatten

    try:
        with torch.no_grad():
            torch.manual_seed(0)
            return tree_flatten(module(*inputs))[0], None
    except Exception as error:
        return None, error


def _max_difference(expected: list[Any], got: list[Any] | None) -> float | None:
    """The largest absolute difference between the model's outputs and the changed
    module's, when it is more than rounding (None when they agree)."""
    if got is None or len(expected) != len(got):
        return None
    worst = 0.0
    for left, right in zip(expected, got, strict=True):
        if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)):
            continue
        if left.shape != right.shape or not left.is_floating_point():
            continue
        difference = (left - right.to(left.dtype)).abs().max().item() if left.numel() else 0.0
        scale = 1.0 + left.abs().max().item() if left.numel() else 1.0
        if difference > _OUTPUT_TOLERANCE * scale:
            worst = max(worst, difference)
    return worst or None


def _result_raises(outcome: Outcome, module: Any, inputs: tuple[Any, ...],
                   error: Exception) -> Diagnostic | None:
    """FX004 at the pass line that made the node the result raised at (created or rewired
    it, or else one of its inputs), with the exception; None when the pass changed the
    inputs the graph takes (it raised at a placeholder: the old inputs no longer fit)."""
    spec, label = outcome.spec, outcome.subject.label
    node = _failing_node(module, inputs)
    if node is not None and node.op == "placeholder":
        return None
    span = _line_that_made(node, outcome.log) if node is not None else None
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    what = f"{type(error).__name__}: {text}" if text else type(error).__name__
    at = f" at its node `{node.name}`" if node is not None else ""
    item = diagnostic(
        "FX004", f"`{spec.name}`'s result raises on the example inputs{at} "
        f"({in_graph(label)}): {what}", span or spec.span, spec.name, kind="exception",
        graph=label, **({"node": node.name} if node is not None else {}))
    item.data["pass"] = spec.name
    if span is not None and span != spec.span:
        item.related.append(RelatedInfo(to_span(spec.span), f"the pass `{spec.name}`"))
    return item


def _line_that_made(node: Any, log: EditLog) -> SourceSpan | None:
    """The last pass line that created or rewired ``node``; else the last one that made
    one of its inputs (the value it cannot take may come from there)."""
    for each in (node, *reversed(node.all_input_nodes)):
        edit = next((e for e in reversed(log.node_edits(each)) if e.kind in _SHAPING), None)
        if edit is not None:
            return edit.span
    return None


def _failing_node(module: Any, inputs: tuple[Any, ...]) -> Any:
    """The node of ``module``'s graph whose run raises on ``inputs`` (None when it is not
    a graph module or the run by node does not raise)."""
    interpreter = interpreter_class(module)
    if interpreter is None:
        return None
    current: list[Any] = [None]

    class Watching(interpreter):  # type: ignore[misc, valid-type]
        def run_node(self, n: Any) -> Any:
            current[0] = n
            return super().run_node(n)

    try:
        with torch.no_grad():
            torch.manual_seed(0)
            Watching(module).run(*inputs)
    except Exception:
        return current[0]
    return None


def interpreter_class(module: Any) -> type | None:
    import torch.fx

    from fxcore.graph_module import GraphModule as CoreGraphModule
    from fxcore.interpreter import Interpreter as CoreInterpreter

    if isinstance(module, torch.fx.GraphModule):
        return torch.fx.Interpreter
    if isinstance(module, CoreGraphModule):
        return CoreInterpreter
    return None
