"""The editor's views of an FX pass: its code lens title and its before/after view.

A pass's runs (one per graph it ran on) come from the report (``PassReport.runs``); the
lens sums them up on one line, the before/after view (``fxls.showGraph`` with the format
``pass``) is a unified diff of each graph's generated code before and after the pass.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from fxls.report import PassGraphRun, PassReport

#: ``fxls.showGraph`` format of a pass's before/after view
PASS_FORMAT = "pass"
#: the suffix the analysis puts on the label of a representative graph
_REPRESENTATIVE = " (representative)"
#: where a problem message says which graph or pass it is about (the lens says it already)
_WHERE = re.compile(r"\s*\((?:in the (?:export )?graph of|raised by the pass) [^()]*\)\s*$")
#: how many graphs a lens names before "+N more"
_LENS_GRAPHS = 4
_PROBLEM_CHARS = 60
#: code longer than this (lines) is diffed with context around the changes only
_FULL_DIFF_LINES = 80


def graph_label(run: PassGraphRun) -> str:
    """The graph's name without the ``(representative)`` suffix."""
    return run.graph.removesuffix(_REPRESENTATIVE)


def short_problem(message: str) -> str:
    """A problem message short enough for a code lens."""
    text = _WHERE.sub("", message).strip()
    if len(text) <= _PROBLEM_CHARS:
        return text
    head = text.split(": ", 1)[0]
    if 20 <= len(head) <= _PROBLEM_CHARS:
        return head
    return text[: _PROBLEM_CHARS - 1].rstrip() + "…"


def change_counts(run: PassGraphRun) -> str:
    """``+1 -2, 1 rewired, 2 modules swapped``."""
    parts = [f"+{len(run.added)} -{len(run.removed)}"]
    if run.rewired:
        parts.append(f"{len(run.rewired)} rewired")
    if run.swapped:
        parts.append(f"{len(run.swapped)} module{'s' if len(run.swapped) > 1 else ''} swapped")
    return ", ".join(parts)


def changed(run: PassGraphRun) -> bool:
    """Whether the pass changed the graph or the modules it calls (a module swap leaves the
    graph as it was)."""
    return bool(run.added or run.removed or run.rewired or run.swapped)


def lens_title(report: PassReport) -> str:
    """``negate_after_relu — Net: +1 -0, 1 rewired`` (a problem instead of the counts;
    ``on representative graphs: MLP +1 -0 · ...`` when the file has no model to run it on)."""
    if not report.runs:
        return f"{report.name} — not run: no graph to run it on"
    representative = report.graphs_from == "representative"
    separator = " " if representative else ": "
    problems: list[str] = []  # first: they are what the user has to act on
    changes: list[str] = []
    unchanged: list[str] = []
    for run in report.runs:
        label = graph_label(run)
        if run.problem is not None:
            problems.append(f"{label}: {short_problem(run.problem)}")
        elif changed(run):
            changes.append(f"{label}{separator}{change_counts(run)}")
        else:
            unchanged.append(label)
    items = [*problems, *changes]
    if unchanged:
        items.append(f"{', '.join(unchanged)}: no change")
    if len(items) > _LENS_GRAPHS:
        items = [*items[:_LENS_GRAPHS], f"+{len(items) - _LENS_GRAPHS} more"]
    summary = " · ".join(items)
    if representative:
        summary = f"on representative graphs: {summary}"
    elif report.graphs_from == "pass_models":
        summary = f"on pass_models: {summary}"
    return f"{report.name} — {summary}"


def _code_lines(code: str | None) -> list[str]:
    lines = [line.rstrip() for line in (code or "").splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run_diff(run: PassGraphRun) -> list[str]:
    """The unified diff of the graph's code before and after the pass (no ``---``/``+++``
    header; ``@@`` hunk lines only when the code is long enough to be cut)."""
    before, after = _code_lines(run.before), _code_lines(run.after)
    if run.after is None:
        # the pass failed or returned no graph: nothing to compare with
        return [f" {line}" for line in before]
    longest = max(len(before), len(after))
    context = longest if longest <= _FULL_DIFF_LINES else 3
    lines = list(difflib.unified_diff(before, after, lineterm="", n=context))[2:]
    if not lines:  # identical
        return [f" {line}" for line in after]
    if context == longest:
        lines = [line for line in lines if not line.startswith("@@")]
    return lines


def run_summary(run: PassGraphRun) -> str:
    """``Net: +1 -0, 1 rewired``, ``Net: no change`` or ``Net: <short problem>``."""
    if run.problem is not None:
        return f"{graph_label(run)}: {short_problem(run.problem)}"
    return f"{graph_label(run)}: {change_counts(run) if changed(run) else 'no change'}"


def pass_text(report: PassReport) -> str:
    """The before/after view as plain text (a diff per graph), for editors without a view of
    their own (Neovim shows it in a scratch buffer with ``filetype=diff``)."""
    out = [f"# {report.name} ({report.kind}): before -> after"]
    if report.graphs_from == "representative":
        out.append("# the file has no model to run it on: it ran on representative graphs")
    elif report.graphs_from == "pass_models":
        out.append("# ran on the project's pass_models")
    if not report.runs:
        out.append("# not run: no graph to run it on")
    for run in report.runs:
        out.append("")
        if run.problem is None and not changed(run):
            out.append(f"# {run_summary(run)}")
            continue
        out.append(f"--- {graph_label(run)} (before)")
        out.append(f"+++ {graph_label(run)} (after `{report.name}`)")
        if run.problem is not None:
            out.append(f"# problem: {run.problem}")
        for label, names in (("added", run.added), ("removed", run.removed),
                             ("rewired", run.rewired)):
            if names:
                out.append(f"# {label}: {', '.join(names)}")
        if run.swapped:  # the code does not show it: the calls read as before
            out.append("# modules swapped: " + ", ".join(
                f"{path} (now {cls.rpartition('.')[2]})" for path, cls in run.swapped.items()))
        out.extend(run_diff(run))
    return "\n".join(out) + "\n"


def pass_view(report: PassReport) -> dict[str, Any]:
    """The ``fxls.showGraph`` answer for a pass: ``text`` (the plain diff) and ``runs``
    (per graph: summary, added/removed/rewired names, problem, before/after code, diff)."""
    return {
        "name": report.name,
        "status": "problem" if report.has_problem else "ok",
        "format": PASS_FORMAT,
        "kind": "pass",
        "passKind": report.kind,
        "graphsFrom": report.graphs_from,
        "title": lens_title(report),
        "text": pass_text(report),
        "runs": [
            {
                "graph": graph_label(run),
                "summary": run_summary(run),
                "added": list(run.added),
                "removed": list(run.removed),
                "rewired": list(run.rewired),
                "problem": run.problem,
                "before": "\n".join(_code_lines(run.before)),
                "after": "\n".join(_code_lines(run.after)) if run.after is not None else None,
                "diff": run_diff(run),
            }
            for run in report.runs
        ],
    }


def find_pass(passes: list[PassReport], name: str) -> PassReport | None:
    return next((p for p in passes if p.name == name), None)
