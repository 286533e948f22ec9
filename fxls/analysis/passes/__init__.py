"""FX passes: find a file's passes, run them on real graphs, check every graph they touch.

``PassAnalysis`` is what the pipeline holds for one file: its ``EditLog`` is active while the
file is imported (passes the file runs at import are recorded too) and while the found
passes run on fresh copies of the file's models (or the project's ``pass_models``, or the
representative graphs); each problem is a diagnostic at the pass line that caused it.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from typing import Any

import torch

from fxcore.source import SourceSpan
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.passes.checks import Where, lint_graph, unused_nodes
from fxls.analysis.passes.discovery import PassSpec, find_passes
from fxls.analysis.passes.edits import EditKind, EditLog
from fxls.analysis.passes.export_passes import mark_export_passes
from fxls.analysis.passes.import_rewrites import rewrites_at_import
from fxls.analysis.passes.runner import (
    PassResults,
    Subject,
    compare_outputs,
    run_passes,
    stale_calls,
)
from fxls.analysis.passes.user_objects import attribute
from fxls.report import Diagnostic, RelatedInfo

__all__ = ["PassAnalysis", "Subject", "compare_outputs", "global_subjects", "project_subjects",
           "representative_subjects"]


class PassAnalysis:
    def __init__(self, filename: str, source: str, is_reportable: Callable[[str], bool]) -> None:
        self.filename = filename
        self.source = source
        self.is_reportable = is_reportable
        self.log = EditLog(is_reportable, {filename: source})
        self._lint_failed_at_import = False

    # -- what the file did at import ---------------------------------------------------
    def import_time(self, namespace: dict[str, Any]) -> list[Diagnostic]:
        """Lint every graph the file built or edited at import and every graph bound to a
        module global; FX007 for a global GraphModule left stale by an edit."""
        graphs = _global_graphs(namespace)
        for edit in self.log.edits:
            graphs.setdefault(id(edit.graph), ("a graph built at import", edit.graph))
        first_line = SourceSpan(self.filename, 1, 1, 0, 0)
        found: list[Diagnostic] = []
        broken = False
        for label, graph in graphs.values():
            where = Where(label, first_line, self.is_reportable, "")
            lint_problems = lint_graph(graph, self.log, where)
            broken = broken or bool(lint_problems)
            found.extend(lint_problems)
            created = {e.node.name for e in self.log.edits
                       if e.graph is graph and e.kind is EditKind.CREATE}
            found.extend(unused_nodes(graph, created, self.log, where))
        found.extend(self._stale_globals(namespace))
        found.extend(stale_calls(self.log, 0, "a graph built at import"))
        self._lint_failed_at_import = broken
        return found

    def rewrites_changing_outputs(self, namespace: dict[str, Any]) -> list[Diagnostic]:
        """FX017 for a module-level rewrite of a global GraphModule (``import_rewrites``):
        the graphs run on example inputs, so after tracing's first diagnostics."""
        if not self.log.edits or self._lint_failed_at_import:
            return []
        try:
            tree = ast.parse(self.source)
        except (SyntaxError, ValueError):
            return []
        return rewrites_at_import(tree, namespace, self.log, self.filename, self.is_reportable)

    def _stale_globals(self, namespace: dict[str, Any]) -> list[Diagnostic]:
        found = []
        for name, value in namespace.items():
            if attribute(value, "recompile") is None or attribute(value, "graph") is None:
                continue
            stale = self.log.stale_edit(value)
            if stale is None:
                continue
            item = diagnostic(
                "FX007", f"`{name}`'s graph changed here after its last `recompile()`: calling "
                f"`{name}` still runs the old code (call `{name}.recompile()` after the pass)",
                stale.span, stale.pass_name, graph=name)
            item.data["pass"] = stale.pass_name
            item.related.append(RelatedInfo(to_span(stale.span),
                                            "the first change since the last recompile()"))
            found.append(item)
        return found

    # -- the file's passes on real graphs ----------------------------------------------
    def find(self, tree: ast.AST | None, namespace: dict[str, Any]) -> list[PassSpec]:
        if not isinstance(tree, ast.Module):
            return []
        try:
            found = find_passes(tree, namespace, self.filename)
        except Exception:
            found = []
        return mark_export_passes(found, tree, self.source, namespace, self.filename)

    def run(self, specs: list[PassSpec], subjects: list[Subject], graphs_from: str
            ) -> PassResults:
        with self.log.active():
            return run_passes(specs, subjects, graphs_from, self.log, self.is_reportable)


def _global_graphs(namespace: dict[str, Any]) -> dict[int, tuple[str, Any]]:
    """Graphs bound to module globals (directly or as a GraphModule's), each with the first
    name it is bound to."""
    found: dict[int, tuple[str, Any]] = {}
    for name, value in list(namespace.items()):
        graph = getattr(value, "graph", None) if _is_graph_module(value) else value
        if _is_graph(graph):
            found.setdefault(id(graph), (name, graph))
    return found


def _is_graph(value: Any) -> bool:
    import torch.fx

    from fxcore.graph import Graph

    return isinstance(value, torch.fx.Graph | Graph)


def _is_graph_module(value: Any) -> bool:
    import torch.fx

    from fxcore.graph_module import GraphModule

    return isinstance(value, torch.fx.GraphModule | GraphModule)


def project_subjects(entries: list[str]) -> tuple[list[Subject], list[str]]:
    """Subjects for ``pass_models`` (``"pkg.models:resnet18()"``), and the entries that
    could not be built or traced, each with why."""
    import fxcore
    from fxls.analysis.inputs import infer_inputs

    subjects, problems = [], []
    for entry in entries:
        module_name, _, expression = entry.partition(":")
        try:
            module = importlib.import_module(module_name.strip())
            instance = eval(expression.strip() or "None", vars(module))
            if not isinstance(instance, torch.nn.Module):
                raise TypeError(f"it gave a {type(instance).__name__}, not an nn.Module")
            instance.eval()
            gm = fxcore.symbolic_trace(instance)
        except Exception as error:
            problems.append(f"`pass_models` entry {entry!r}: {type(error).__name__}: {error}")
            continue
        inputs = _safe_inputs(infer_inputs, gm)
        subjects.append(Subject(expression.strip() or module_name, gm, instance,
                                lambda inputs=inputs: inputs))
    return subjects, problems


def global_subjects(namespace: dict[str, Any], leaf_modules: tuple[str, ...] = (),
                    autowrap: tuple[Any, ...] = ()) -> list[Subject]:
    """Models the file builds at module level (``model = resnet18()``) that are no
    GraphModule, traced with fxcore: what its passes run on when it defines no model class."""
    from fxcore.recovering import trace_collecting_issues
    from fxls.analysis.inputs import infer_inputs

    subjects = []
    seen: set[int] = set()
    for name, value in list(namespace.items()):
        if not isinstance(value, torch.nn.Module) or _is_graph_module(value) or (
                id(value) in seen or name.startswith("_")):
            continue
        seen.add(id(value))
        try:
            value.eval()
            trace = trace_collecting_issues(value, None, leaf_modules=leaf_modules,
                                            autowrap_functions=autowrap)
        except Exception:
            continue
        if trace.graph_module is None or trace.issues:
            continue
        inputs = _safe_inputs(infer_inputs, trace.graph_module)
        subjects.append(Subject(name, trace.graph_module, value, lambda inputs=inputs: inputs))
    return subjects


def representative_subjects() -> list[Subject]:
    import fxcore
    from fxls.analysis.passes.representative import GRAPHS

    subjects = []
    for name, (cls, make_inputs) in GRAPHS.items():
        torch.manual_seed(0)
        instance = cls().eval()
        inputs = make_inputs()
        subjects.append(Subject(f"{name} (representative)", fxcore.symbolic_trace(instance),
                                instance, lambda inputs=inputs: inputs))
    return subjects


def _safe_inputs(infer: Callable[[Any], Any], gm: Any) -> Any:
    try:
        return infer(gm)
    except Exception:
        return None
