"""The analysis of one file: path + source text + settings -> FileReport.

Runs inside a worker job (it executes the user's file). Steps: execute the file as a module;
for each nn.Module class: construct it, trace it with fxcore's recovering trace while
recording trace-time calls, infer example inputs, propagate shapes, run the rules; lint
graphs bound to module globals; then apply pragmas and select/ignore and drop duplicates.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any

import torch
from torch.utils._pytree import tree_map

import fxcore
from fxcore.graph import Graph
from fxcore.graph_module import GraphModule
from fxcore.node import Node, _format_arg
from fxcore.recovering import (
    CollectedTrace,
    IssueKind,
    TraceIssue,
    has_forward,
    trace_collecting_issues,
)
from fxcore.source import SourceSpan
from fxls.analysis import rewrites, rules
from fxls.analysis.calls import submodule_calls
from fxls.analysis.codegen_failure import codegen_failure, misread_names
from fxls.analysis.construction import (
    INFERRED,
    Built,
    FileScope,
    NotBuilt,
    Outcome,
    build_all,
    construction_failed,
)
from fxls.analysis.context import ModuleContext, run_rule
from fxls.analysis.diagnostics import diagnostic, to_span
from fxls.analysis.inputs import eval_pragma_args, infer_inputs, spatial_size
from fxls.analysis.libraries import registrations
from fxls.analysis.library_names import module_named_by_file, qualname_at
from fxls.analysis.loading import (
    class_definitions,
    class_span,
    execute_file,
    module_classes,
    parse_source,
)
from fxls.analysis.named_args import named_arguments
from fxls.analysis.network import refusal_diagnostics
from fxls.analysis.observe import observe, run_eager, signature
from fxls.analysis.packages import ModuleLocation, locate_module
from fxls.analysis.passes import (
    PassAnalysis,
    Subject,
    compare_outputs,
    global_subjects,
    project_subjects,
    representative_subjects,
)
from fxls.analysis.passes.discovery import PassSpec
from fxls.analysis.passes.runner import PassResults
from fxls.analysis.pragmas import ClassPragmas, FilePragmas, parse_pragmas
from fxls.analysis.real_weights import RealWeights, State
from fxls.analysis.recorder import TraceRecorder
from fxls.analysis.shape_build import parameter_values_read
from fxls.analysis.user_rules import UserRule, find_user_rewrites, load_rule_files
from fxls.analysis.wording import in_user_terms
from fxls.codes import code_selected, parse_code_list
from fxls.report import (
    CallInfo,
    Diagnostic,
    FileReport,
    ModuleReport,
    NodeInfo,
    RelatedInfo,
    Span,
    TraceStatus,
)
from fxls.settings import Settings
from fxls.source_text import SourceText, source_text
from fxls.worker.api import ProcessExit

_MAX_NODES_FOR_AUTOGRAD = 3000
_SITE_MARKERS = ("site-packages", "dist-packages")


@dataclass
class _File:
    """What every class of one file is analysed with."""

    filename: str  # absolute
    source: str
    root: str
    settings: Settings
    tree: ast.AST | None
    pragmas: FilePragmas
    #: folders of the user's own code (see ``_own_folders``)
    own_folders: tuple[str, ...] = ()
    namespace: dict[str, Any] = field(default_factory=dict)
    definitions: dict[str, ast.ClassDef] = field(default_factory=dict)
    leaf_names: tuple[str, ...] = ()
    autowrap: tuple[Any, ...] = ()
    user_rules: list[UserRule] = field(default_factory=list)
    rewrite_candidates: list[rewrites.Candidate] = field(default_factory=list)
    other_trees: dict[str, ast.AST | None] = field(default_factory=dict)
    #: leaf classes that imported libraries declared (name -> who declared it)
    declared_leaves: dict[str, str] = field(default_factory=dict)
    text: SourceText = field(init=False)

    def __post_init__(self) -> None:
        self.text = source_text(self.source)

    def tree_of(self, filename: str) -> ast.AST | None:
        """The parsed text of this file or of another file a span points into."""
        if filename == self.filename:
            return self.tree
        if filename not in self.other_trees:
            self.other_trees[filename] = parse_source("".join(linecache.getlines(filename)))
        return self.other_trees[filename]

    def is_reportable(self, candidate: str) -> bool:
        """This file, another file of its package, or of the project (not an installed
        package)."""
        if candidate == self.filename:
            return True
        project, *packages = self.own_folders or (self.root,)
        if any(candidate.startswith(f"{folder.rstrip('/')}/") for folder in packages):
            return True  # the file's own package, even where pip installed it
        return candidate.startswith(f"{project.rstrip('/')}/") and not any(
            m in candidate for m in _SITE_MARKERS)


def analyze_source(
    path: str,
    source: str,
    settings: Settings,
    on_diagnostics: Callable[[FileReport], None] | None = None,
) -> FileReport:
    """The file's report. ``on_diagnostics`` gets the diagnostics of tracing first (every
    code but FX014 and FX020), before the rewrite matching and the example-input runs that
    add shapes, backward nodes and the graph-vs-eager check: an editor can show the
    traceability problems without waiting for those. A file with FX passes gets a second
    call with the models' complete report, before its passes run: they are the user's own
    code and can cost several times the whole analysis of the models."""
    started = perf_counter()
    filename = str(Path(path).resolve())
    tree = parse_source(source)  # None: executing it reports the error (FX100)
    project_root = Path(settings.root) if settings.root else None
    location = locate_module(Path(filename), project_root, settings.roots,
                             tree if isinstance(tree, ast.Module) else None)
    file = _File(filename, source, settings.root or str(Path(filename).parent), settings, tree,
                 parse_pragmas(source, tree), own_folders=_own_folders(settings.root, location,
                                                                       filename))
    report = FileReport(path)
    passes = PassAnalysis(filename, source, file.is_reportable)
    with passes.log.active():  # passes the file runs at import are checked too
        loaded = execute_file(Path(filename), source,
                              tree if isinstance(tree, ast.Module) else None,
                              location, (settings.root,) if settings.root else ())
    report.timings_ms["import"] = (perf_counter() - started) * 1000
    for failure in loaded.failures:
        item = diagnostic("FX100", failure.message, failure.span, "")
        item.related.extend(RelatedInfo(to_span(s), "raised here") for s in failure.related)
        report.diagnostics.append(item)
    if loaded.module is None:
        return _finish(report, file)
    loaded = loaded.module
    declared = registrations()
    file.namespace = dict(vars(loaded))
    file.definitions = class_definitions(tree)
    classes = module_classes(loaded, file.definitions)
    file.leaf_names = tuple(settings.leaf_modules) + tuple(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in classes
        if file.pragmas.classes.get(cls.__name__, ClassPragmas()).leaf
    ) + tuple(sorted(declared.leaf_classes))
    file.declared_leaves = declared.declared_by
    opaque = _resolve_functions(file.pragmas.opaque, file.namespace)
    file.leaf_names += tuple(f"{o.__module__}.{o.__qualname__}" for o in opaque
                             if isinstance(o, type) and issubclass(o, torch.nn.Module))
    file.autowrap = (*_resolve_functions(settings.autowrap_functions, file.namespace),
                     *declared.functions, *(o for o in opaque if not isinstance(o, type)))
    file.user_rules, rule_problems = load_rule_files(settings.rule_files, file.root)
    first_line_span = SourceSpan(filename, 1, 1, 0, file.text.byte_length(1))
    for problem in rule_problems:
        report.diagnostics.append(diagnostic(
            "FX004", f"fxls could not use a rewrite rule: {problem}", first_line_span, ""))
    unknown = [f"`{name}`" for name in settings.autowrap_functions
               if not _resolve_functions([name], file.namespace)]
    if unknown:
        report.diagnostics.append(diagnostic(
            "FX004", f"fxls could not use `autowrap_functions` {', '.join(unknown)}: no such "
            "function (write each as `package.module.function`)", first_line_span, ""))
    trace_started = perf_counter()
    outcomes, entry_problems = build_all(classes, FileScope(
        loaded.__name__, file.namespace, tree if isinstance(tree, ast.Module) else None,
        source, file.pragmas, settings.entry_points))
    for problem in entry_problems:
        report.diagnostics.append(diagnostic("FX004", problem, first_line_span, ""))
    report.timings_ms["construct"] = (perf_counter() - trace_started) * 1000
    seen: _Seen = {}
    traced: list[_Traced] = []
    for cls in classes:
        module_report, found, done = _analyze_class(cls, file, outcomes.get(cls))
        report.modules.append(module_report)
        _add_diagnostics(report, seen, module_report, found)
        if done is not None:
            traced.append(done)
    graphs = _module_graphs(file.namespace)
    report.diagnostics.extend(passes.import_time(file.namespace))
    report.timings_ms["trace"] = (perf_counter() - trace_started) * 1000
    if on_diagnostics is not None:
        report.timings_ms["diagnostics"] = (perf_counter() - started) * 1000
        on_diagnostics(_finish(replace(report, diagnostics=list(report.diagnostics)), file))
    observe_started = perf_counter()
    if tree is not None and traced:
        file.rewrite_candidates = rewrites.candidates(tree, source, file.namespace)
    # the real weights (built now, as the complete report's runs need them; a constructor
    # that cannot build the real model is reported as it always was)
    weights_started = perf_counter()
    for done in list(traced):
        _with_real_weights(done, file, report, seen, traced)
    report.timings_ms["real_weights"] = (perf_counter() - weights_started) * 1000
    harvested = {id(t.instance): t for t in traced if t.module_report.via is not None}
    # roots first: their eager runs capture the inputs of the instances found inside them
    for done in sorted(traced, key=lambda t: t.module_report.via is not None):
        if done.captured is not None and not done.inputs_from_pragma:
            done.ctx.example_inputs = done.captured
        if done.weights is not None and done.weights.state is not State.REAL:
            done.ctx.example_inputs = None  # no real weights to run it with
        _add_diagnostics(report, seen, done.module_report,
                         _observe_class(done, file, harvested))
    for name, graph in graphs:
        report.graphs.append(_graph_report(name, graph))
    report.timings_ms["observe"] = (perf_counter() - observe_started) * 1000
    specs = passes.find(tree, file.namespace)
    if specs:
        # the models' complete report goes out before the passes run (a third stage)
        if on_diagnostics is not None:
            report.timings_ms["models"] = (perf_counter() - started) * 1000
            on_diagnostics(_finish(replace(report, diagnostics=list(report.diagnostics)), file))
        passes_started = perf_counter()
        pass_results = _run_passes(passes, specs, file, traced, report)
        report.diagnostics.extend(compare_outputs(pass_results.outcomes))
        report.timings_ms["passes"] = (perf_counter() - passes_started) * 1000
    report.timings_ms["total"] = (perf_counter() - started) * 1000
    return _finish(report, file)


def _run_passes(passes: PassAnalysis, specs: list[PassSpec], file: _File,
                traced: list[_Traced], report: FileReport) -> PassResults:
    """Run the file's passes on its root models (else the project's ``pass_models``, else
    the representative graphs)."""
    roots = [t for t in traced if t.module_report.via is None
             and t.module_report.status is TraceStatus.TRACED and t.ctx.graph_module]
    # a class another root already contains (a block of the network) adds nothing
    inside = {type(m) for t in roots for m in list(t.instance.modules())[1:]}
    subjects = [Subject(t.module_report.name, t.ctx.graph_module, t.instance,
                        partial(_inputs_of, t))
                for t in roots if type(t.instance) not in inside]
    if not subjects:
        subjects = global_subjects(file.namespace, file.leaf_names, file.autowrap)
    graphs_from = "models"
    if not subjects and file.settings.pass_models:
        subjects, problems = project_subjects(file.settings.pass_models)
        graphs_from = "pass_models"
        first_line = SourceSpan(file.filename, 1, 1, 0, file.text.byte_length(1))
        report.diagnostics.extend(diagnostic("FX004", f"fxls could not use {problem}",
                                             first_line, "") for problem in problems)
    if not subjects:
        subjects, graphs_from = representative_subjects(), "representative"
    results = passes.run(specs, subjects, graphs_from)
    report.passes = results.reports
    report.diagnostics.extend(results.diagnostics)
    return results


def _inputs_of(traced: _Traced) -> tuple[Any, ...] | None:
    return traced.ctx.example_inputs


def _own_folders(project_root: str, location: ModuleLocation, filename: str) -> tuple[str, ...]:
    """The folders whose files are the user's own (their spans are reported): the project
    root, and the folder of the file's top package (when it runs inside a package, its
    siblings are the user's code even outside the project root, e.g. checked in place)."""
    folders = [project_root or str(Path(filename).parent)]
    top = location.name.partition(".")[0]
    if location.package:
        folders.append(str(Path(location.import_root) / top))
    return tuple(folders)


_Seen = dict[tuple[str, tuple[str, int, int, int, int]], Diagnostic]


def _add_diagnostics(
    report: FileReport, seen: _Seen, module_report: ModuleReport, found: list[Diagnostic]
) -> None:
    """Add ``found``; a problem already reported from another module gains a related link."""
    for item in found:
        first = seen.setdefault((item.code, item.span.key()), item)
        if first is item:
            report.diagnostics.append(item)
        elif module_report.span is not None and item.module != first.module:
            first.related.append(RelatedInfo(
                module_report.span, f"also reached when tracing `{item.module}`"))
            first.data.setdefault("also_reached_from", []).append(item.module)


def _finish(report: FileReport, file: _File) -> FileReport:
    """Apply select/ignore and ignore pragmas; one diagnostic per (code, range), sorted."""
    report.diagnostics.extend(refusal_diagnostics(file.filename, file.settings.root))
    select = parse_code_list(file.settings.select)
    ignore = parse_code_list(file.settings.ignore)
    kept = []
    keys = set()
    for item in report.diagnostics:
        if not code_selected(item.code, select, ignore):
            continue
        if item.span.file == file.filename and file.pragmas.is_ignored(item.span.line, item.code):
            continue
        key = (item.code, item.span.key())
        if key in keys:
            continue
        keys.add(key)
        kept.append(item)
    kept.sort(key=lambda d: (d.span.file, d.span.line, d.span.col, d.code))
    report.diagnostics = kept
    return report


def _resolve_functions(names: list[str], namespace: dict[str, Any]) -> tuple[Any, ...]:
    import importlib

    found = []
    for name in names:
        if name in namespace and callable(namespace[name]):
            found.append(namespace[name])
            continue
        module_name, _, attr = name.rpartition(".")
        try:
            found.append(getattr(importlib.import_module(module_name), attr))
        except Exception:
            continue
    return tuple(found)


def _mode_difference(
    instance: torch.nn.Module, concrete: Any, eval_graph: GraphModule, name: str,
    span: SourceSpan, file: _File,
) -> list[Diagnostic]:
    """``trace_mode = "both"``: trace in train mode too and say where the two graphs part
    (the eval graph stays the module's graph), as torchvision's feature extraction does."""
    instance.train(True)
    try:
        train = trace_collecting_issues(instance, concrete, leaf_modules=file.leaf_names,
                                        autowrap_functions=file.autowrap)
    finally:
        instance.eval()
    if train.graph_module is None or train.issues:
        return []
    eval_nodes = list(eval_graph.graph.nodes)
    train_nodes = list(train.graph_module.graph.nodes)
    pairs = enumerate(zip(eval_nodes, train_nodes, strict=False))
    index = next((i for i, (left, right) in pairs
                  if (left.op, left.target) != (right.op, right.target)), None)
    if index is None:
        if len(eval_nodes) == len(train_nodes):
            return []
        index = min(len(eval_nodes), len(train_nodes))

    def described(nodes: list[Node]) -> str:
        return f"`{_target_text(nodes[index])}`" if index < len(nodes) else "nothing more"

    where_node = train_nodes[index] if index < len(train_nodes) else eval_nodes[index]
    where = where_node.meta.get("source")
    if where is None or not file.is_reportable(where.file):
        where = span
    return [diagnostic(
        "FX016", f"`{name}` traces to different graphs in train and eval mode: from here, "
        f"train mode records {described(train_nodes)} where eval mode records "
        f"{described(eval_nodes)} (`self.training` decides this at trace time); the graph "
        "shown is the eval one", where, name)]


def _not_built(
    outcome: NotBuilt, module_report: ModuleReport, span: SourceSpan, file: _File
) -> Diagnostic:
    module_report.reason = outcome.reason
    name = module_report.name
    where = span
    if outcome.error is not None:
        module_report.status = TraceStatus.FAILED
        spans = fxcore.source.spans_of_traceback(outcome.error.__traceback__)
        where = next((s for s in reversed(spans) if s.file == file.filename), span)
    elif outcome.message.startswith("the `init` pragma"):
        line = file.pragmas.classes.get(name, ClassPragmas()).lines.get("init", span.line)
        if line != span.line:
            where = SourceSpan(file.filename, line, line, 0, 0)
    return diagnostic(outcome.code, outcome.message, where, name, parameters=outcome.missing)


@dataclass
class _Traced:
    """A traced class between the two phases: what its example-input runs need."""

    module_report: ModuleReport
    instance: torch.nn.Module
    ctx: ModuleContext
    span: SourceSpan
    #: the example inputs came from an ``args`` pragma (never replaced)
    inputs_from_pragma: bool = False
    #: the instance was built without initialisers: its real weights (see ``real_weights``)
    weights: RealWeights | None = None

    @property
    def inputs_inferred(self) -> bool:
        return not self.inputs_from_pragma and self.captured is None
    #: the inputs its root gave it in the root's eager run (a harvested instance)
    captured: tuple[Any, ...] | None = None


def _analyze_class(
    cls: type, file: _File, outcome: Outcome | None
) -> tuple[ModuleReport, list[Diagnostic], _Traced | None]:
    """Trace and check one class's instance; the traced state for ``_observe_class``."""
    name = cls.__name__
    span = class_span(cls, file.filename, file.source, file.definitions)
    module_report = ModuleReport(name, TraceStatus.SKIPPED, 0, to_span(span))
    pragmas = file.pragmas.classes.get(name, ClassPragmas())
    instance_forward = isinstance(outcome, Built) and "forward" in vars(outcome.instance)
    if not has_forward(cls) and not instance_forward:  # (some set self.forward in __init__)
        module_report.reason = "it has no forward of its own (a base class): nothing to trace"
        return module_report, [], None
    declared_by = file.declared_leaves.get(f"{cls.__module__}.{cls.__qualname__}")
    if declared_by is not None:
        module_report.reason = f"a leaf module by {declared_by}"
        return module_report, [], None
    if pragmas.skip or pragmas.leaf or outcome is None:
        module_report.reason = "`# fxls: leaf`" if pragmas.leaf else "`# fxls: skip`"
        return module_report, [], None
    if isinstance(outcome, NotBuilt):
        return module_report, [_not_built(outcome, module_report, span, file)], None
    instance = outcome.instance
    module_report.via, module_report.entry = outcome.via, outcome.entry
    concrete = None
    if pragmas.concrete:
        try:
            concrete = eval(pragmas.concrete, {**file.namespace, "torch": torch})
        except Exception as error:
            return module_report, [diagnostic(
                "FX004", f"the `concrete` pragma of `{name}` cannot be evaluated: {error}",
                span, name)], None
    instance.train(file.settings.trace_mode == "train")  # traced in the mode it runs in
    # ("both": the eval graph is the module's graph; the train one is only compared)
    weights = outcome.weights
    try:
        trace, recorder, values_read = _trace(
            instance, concrete, file, weights is not None and weights.state is State.PENDING)
        if values_read:  # the trace read parameter values, which the build for tracing lacks
            assert weights is not None
            state = weights.realise()
            real = weights.counterpart(instance)
            if state is State.DIFFERS and real is not None:
                return _analyze_class(cls, file, replace(outcome, instance=real, weights=None))
            if state is not State.REAL:
                return module_report, [_real_build_failed(weights, cls, module_report, span,
                                                          file)], None
            trace, recorder, _ = _trace(instance, concrete, file, False)
    except SystemExit as error:  # not an Exception: the recovering trace lets it through
        module_report.status = TraceStatus.FAILED
        return module_report, [_exit_diagnostic(error, name, span, file)], None
    found = [_issue_diagnostic(issue, name, span, file) for issue in trace.issues]
    gm = trace.graph_module
    if gm is None:
        module_report.status = TraceStatus.FAILED
        if trace.codegen_error is not None:
            failure, module_report.reason = codegen_failure(
                trace.codegen_error, trace.graph, instance, name, span, file.tree,
                file.filename)
            found.append(failure)
        elif not found:  # never a silent "failed"
            module_report.reason = "the trace ended without a graph or a recorded cause"
            found.append(diagnostic("FX004", f"`{name}` could not be traced: the trace "
                                    "ended without a graph or a recorded cause", span, name))
        return module_report, found, None
    module_report.status = TraceStatus.PARTIAL if trace.issues else TraceStatus.TRACED
    module_report.node_count = len(gm.graph.nodes)
    found += misread_names(gm.graph, instance, name, file.tree, file.filename)
    if file.settings.trace_mode == "both" and not trace.issues:
        found += _mode_difference(instance, concrete, gm, name, span, file)
    torch.manual_seed(1)
    example_inputs = (None if outcome.on_meta
                      else _example_inputs(pragmas, file.namespace, gm, trace))
    ctx = ModuleContext(
        file.filename, file.source, name, instance, trace, gm, example_inputs, concrete,
        file.settings, recorder.calls, file.is_reportable,
    )
    found += run_rule(rules.dead_code, ctx, span)
    found += run_rule(rules.inplace_on_inputs, ctx, span)
    found += run_rule(rules.baked_constants, ctx, span, recorder.created_tensors)
    found += run_rule(rules.trace_time_calls, ctx, span)
    return module_report, found, _Traced(module_report, instance, ctx, span, bool(pragmas.args),
                                         weights)


def _trace(
    instance: torch.nn.Module, concrete: Any, file: _File, watch_values: bool
) -> tuple[CollectedTrace, TraceRecorder, bool]:
    """The recovering trace, the calls it recorded, and (``watch_values``) whether it read
    the values of the instance's parameters."""
    recorder = TraceRecorder()
    # the recorder's mode innermost: it takes the user's frame as its caller
    with (parameter_values_read(instance) if watch_values
          else nullcontext(lambda: False)) as values_read, recorder.active():
        trace = trace_collecting_issues(instance, concrete, leaf_modules=file.leaf_names,
                                        autowrap_functions=file.autowrap)
    return trace, recorder, values_read()


def _real_build_failed(
    weights: RealWeights, cls: type, module_report: ModuleReport, span: SourceSpan, file: _File
) -> Diagnostic:
    """The report of a real build that raised or built another model than the one traced
    (``module_report`` gets the reason; its status stays that of the trace)."""
    status = module_report.status
    if weights.error is not None:
        item = _not_built(construction_failed(cls, weights.error), module_report, span, file)
    else:
        message = (f"building `{cls.__name__}` for real gave another model than the one "
                   f"traced ({weights.difference})")
        item = _not_built(NotBuilt("FX102", message, message), module_report, span, file)
    if status is not TraceStatus.SKIPPED:
        module_report.status = status
    return item


def _with_real_weights(
    done: _Traced, file: _File, report: FileReport, seen: _Seen, traced: list[_Traced]
) -> None:
    """Give ``done``'s instance the real weights (those of its whole model) before it runs.
    A real build that raises is reported as a construction failure; one that differs from
    the instance traced has ``done``'s class traced again on the real instance, its report
    replaced (in ``report`` and ``traced``)."""
    weights = done.weights
    if weights is None or weights.realise() is State.REAL:
        return
    cls = type(done.instance)
    real = weights.counterpart(done.instance)
    if real is None:  # the real build raised, or has no such module
        _add_diagnostics(report, seen, done.module_report, [_real_build_failed(
            weights, cls, done.module_report, done.span, file)])
        return
    module_report, found, again = _analyze_class(cls, file, Built(
        real, done.module_report.entry, done.module_report.via,
        parameters=sum(t.numel() for t in (*real.parameters(), *real.buffers()))))
    name = done.module_report.name
    report.modules[next(i for i, m in enumerate(report.modules)
                        if m is done.module_report)] = module_report
    report.diagnostics[:] = [d for d in report.diagnostics if d.module != name]
    for key in [k for k, d in seen.items() if d.module == name]:
        del seen[key]
    _add_diagnostics(report, seen, module_report, found)
    index = next(i for i, t in enumerate(traced) if t is done)
    if again is None:
        del traced[index]
    else:
        traced[index] = again


def _exit_diagnostic(
    error: SystemExit, module: str, class_span_: SourceSpan, file: _File
) -> Diagnostic:
    """FX004 where user code raised SystemExit (``sys.exit()``) while being traced."""
    spans = fxcore.source.spans_of_traceback(error.__traceback__)
    where = next((s for s in reversed(spans) if file.is_reportable(s.file)), class_span_)
    if isinstance(error, ProcessExit):
        message = (f"os._exit({error.exit_code!r}) (called while tracing `{module}`): it ends "
                   "the process at once and cannot be traced; fxls stopped it there")
    else:
        message = (f"SystemExit: {error.code!r} (raised while tracing `{module}`): the code "
                   "called sys.exit(), which ends a program but cannot be traced")
    return diagnostic("FX004", message, where, module, kind="exception")


def _observe_class(
    traced: _Traced, file: _File, harvested: dict[int, _Traced] | None = None
) -> list[Diagnostic]:
    """Rewrite suggestions (FX020); run the graph on the example inputs (shapes, backward
    nodes, output signature), then the module itself (FX014); fill in the node table."""
    ctx, module_report = traced.ctx, traced.module_report
    gm, example_inputs = ctx.graph_module, ctx.example_inputs
    assert gm is not None  # only traced classes get here
    found = [*run_rule(rewrites.find_rewrites, ctx, traced.span, file.rewrite_candidates),
             *run_rule(find_user_rewrites, ctx, traced.span, file.user_rules, file.tree)]
    backward: dict[str, str] = {}
    if example_inputs is not None and not ctx.trace.issues:
        training = file.settings.trace_mode == "train"
        record_backward = len(gm.graph.nodes) <= _MAX_NODES_FOR_AUTOGRAD
        seen = observe(gm, example_inputs, training=training, record_backward=record_backward)
        if not seen.ok and traced.inputs_inferred:
            # small images first (fast); a model that asserts its own size gets it
            size = spatial_size(traced.instance)
            retry = infer_inputs(gm, size) if size is not None else None
            if retry is not None:
                example_inputs = ctx.example_inputs = retry
                seen = observe(gm, retry, training=training, record_backward=record_backward)
        if not seen.ok:
            ran, _ = run_eager(traced.instance, example_inputs, training)
            if ran:  # eager accepts these inputs: the graph is what is wrong
                found += run_rule(rules.graph_failed, ctx, traced.span, traced.span, seen.error)
            elif not _built_from_guesses(traced):  # else fxls's guesses do not fit together
                found.append(_inputs_failed(ctx, traced.span, example_inputs, seen.error))
        if seen.ok:
            backward = seen.backward
            module_report.output_signature = signature(seen.output)
            wanted = _inputs_wanted(traced, harvested or {})
            if file.settings.check_eager or wanted:
                with _capturing_inputs(wanted):
                    ran, eager = run_eager(traced.instance, example_inputs, training)
                if ran and file.settings.check_eager:
                    found += run_rule(rules.eager_mismatch, ctx, traced.span, traced.span, eager,
                                      seen.output)
    elif example_inputs is not None:
        # a partial graph: shapes up to the first node that cannot run, while the user fixes
        # what tracing reported (nothing else is learnt from a graph known to be wrong)
        observe(gm, example_inputs, training=file.settings.trace_mode == "train",
                record_backward=False)
    module_report.code = gm.code
    module_report.nodes = [_node_info(n, gm, backward) for n in gm.graph.nodes]
    module_report.calls = _call_infos(gm)
    module_report.module_types = _module_types(gm)
    return found


def _module_types(gm: GraphModule) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in gm.graph.nodes:
        for path, cls in (node.meta.get("nn_module_stack") or {}).values():
            if path not in found and isinstance(cls, type):
                found[path] = f"{cls.__module__}.{cls.__qualname__}"
    return found


def _call_infos(gm: GraphModule) -> list[CallInfo]:
    return [CallInfo(to_span(span), path, module_type, [n.name for n in nodes],
                     [n.name for n in inputs], [n.name for n in outputs])
            for span, path, module_type, nodes, inputs, outputs
            in submodule_calls(gm.graph.nodes)]


def _inputs_wanted(traced: _Traced, harvested: dict[int, _Traced]) -> list[_Traced]:
    """The harvested instances inside ``traced``'s instance that still need real inputs."""
    if traced.module_report.via is not None or not harvested:
        return []
    return [t for m in traced.instance.modules()
            if (t := harvested.get(id(m))) is not None and t.captured is None]


@contextmanager
def _capturing_inputs(wanted: list[_Traced]) -> Iterator[None]:
    """While the root runs, keep the first positional inputs each wanted instance gets."""

    def hook(target: _Traced, module: Any, args: tuple[Any, ...], kwargs: dict) -> None:
        if target.captured is not None:
            return
        values = _positional(module, args, kwargs)
        if values:  # copied now: the root may append to a list it passed (DenseNet's)
            target.captured = tuple(tree_map(
                lambda a: a.detach().clone() if isinstance(a, torch.Tensor) else a, values))

    handles = [t.instance.register_forward_pre_hook(partial(hook, t), with_kwargs=True)
               for t in wanted]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _positional(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """A call's arguments as ``forward``'s positional parameters in order, defaults filled
    in (``blk(x, rope=rope)`` -> ``[x, rope, None, False]``); [] when that is not possible
    (``*args``/``**kwargs`` in the signature)."""
    try:
        signature = inspect.signature(module.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return []
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY)
           for p in signature.parameters.values()):
        return list(args) if not kwargs else []
    bound.apply_defaults()
    return list(bound.arguments.values())


def _built_from_guesses(traced: _Traced) -> bool:
    """Inputs and constructor arguments both inferred by fxls: when they do not run, that
    says nothing about the user's code."""
    return traced.inputs_inferred and INFERRED in (traced.module_report.entry or "")


def _inputs_failed(
    ctx: ModuleContext, span: SourceSpan, inputs: tuple[Any, ...], error: str
) -> Diagnostic:
    shown = ", ".join(
        f"tensor{tuple(v.shape)}" if isinstance(v, torch.Tensor) else type(v).__name__
        for v in inputs)
    return diagnostic(
        "FX015", f"`{ctx.class_name}` could not run on its example inputs ({shown}): {error}; "
        "shapes, backward nodes and the graph-vs-eager check (FX014) are skipped. Give inputs "
        "it accepts with `# fxls: args (torch.randn(...),)` in the class", span, ctx.class_name)


def _example_inputs(
    pragmas: ClassPragmas, namespace: dict[str, Any], gm: GraphModule, trace: CollectedTrace
) -> tuple[Any, ...] | None:
    if pragmas.args:
        try:
            return eval_pragma_args(pragmas.args, namespace)
        except Exception:
            return None
    if trace.partial:
        return None
    try:
        return infer_inputs(gm)
    except Exception:
        return None


_KIND_TO_CODE = {
    IssueKind.CONTROL_FLOW: "FX001",
    IssueKind.ITERATION: "FX002",
    IssueKind.PYTHON_VALUE: "FX003",
    IssueKind.EXCEPTION: "FX004",
}


def _condition_of(span: SourceSpan, tree: ast.AST) -> SourceSpan:
    """For a bare-name condition Python's positions cover the whole statement: narrow them
    to the statement's test expression."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.While | ast.Assert | ast.IfExp) and (
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
        ) == (span.line, span.col, span.end_line, span.end_col):
            test = node.test
            return SourceSpan(span.file, test.lineno, test.end_lineno or test.lineno,
                              test.col_offset, test.end_col_offset or 0, span.function)
    return span


def _text_at(file: _File, span: SourceSpan) -> str:
    """The spanned text; for a span over several lines (a ``for`` loop), its first line.
    Other files than the analysed one are read as Python read them (linecache)."""
    text = file.text if span.file == file.filename else source_text(
        "".join(linecache.getlines(span.file)))
    if span.line != span.end_line:
        first_line = Span(span.file, span.line, span.line, span.col, text.byte_length(span.line))
        return text.text_at(first_line).split("  #")[0].strip()  # without an inline comment
    return text.text_at(span)


def _issue_diagnostic(
    issue: TraceIssue, module: str, class_span_: SourceSpan, file: _File
) -> Diagnostic:
    code = _KIND_TO_CODE[issue.kind]
    candidates = [*reversed(issue.stack)]
    if issue.span is not None:
        candidates.insert(0, issue.span)
    where = next((s for s in candidates if file.is_reportable(s.file)), class_span_)
    if issue.kind is IssueKind.CONTROL_FLOW:
        tree = file.tree_of(where.file)
        if tree is not None:
            where = _condition_of(where, tree)
    text = _text_at(file, where)
    quoted = f"`{text}`" if text else "this expression"
    if issue.kind is IssueKind.CONTROL_FLOW:
        message = (f"{quoted} depends on a traced value and decides control flow: symbolic "
                   "tracing cannot follow a data-dependent branch")
    elif issue.kind is IssueKind.ITERATION:
        message = (f"{quoted} iterates over a traced value: its length is unknown while "
                   "tracing")
    elif issue.kind is IssueKind.PYTHON_VALUE:
        message = (f"{quoted} turns a traced value into a Python value "
                   f"({issue.conversion}): tensors have no concrete value while tracing")
    else:
        message = f"{issue.message} (raised while tracing `{module}`)"
        if issue.after_recovery:
            message += "; it may follow from an earlier problem in this forward"
    site = issue.span or (issue.stack[-1] if issue.stack else None)
    library = None
    if site is not None and site.file != where.file and not file.is_reportable(site.file):
        library = _library_name(site, file)
        message = _in_library_message(issue, library, site, module)
    item = diagnostic(code, in_user_terms(message), where, module, kind=issue.kind.value)
    if library is not None and site is not None:
        item.related.append(RelatedInfo(to_span(site), _SITE_WORDS[issue.kind]))
        item.data["library_function"] = library
        item.data["opaque"] = _opaque_target(library)
    for outer in issue.stack[:-1]:
        if outer != where and file.is_reportable(outer.file):
            item.related.append(RelatedInfo(to_span(outer), "reached from here"))
    return item


_SITE_WORDS = {
    IssueKind.CONTROL_FLOW: "the data-dependent branch",
    IssueKind.ITERATION: "the iteration over a traced value",
    IssueKind.PYTHON_VALUE: "the conversion to a Python value",
    IssueKind.EXCEPTION: "raised here",
}


def _in_library_message(issue: TraceIssue, library: str, site: SourceSpan, module: str) -> str:
    """The words for a problem whose construct is in library code: where it really is."""
    where = f"inside `{library}` ({Path(site.file).name}:{site.line}), reached from here"
    if issue.kind is IssueKind.CONTROL_FLOW:
        return (f"a data-dependent branch {where}: symbolic tracing cannot follow it; "
                "trace that function or module as a leaf (`autowrap_functions` / "
                "`leaf_modules` in [tool.fxls])")
    if issue.kind is IssueKind.ITERATION:
        return f"an iteration over a traced value {where}: its length is unknown while tracing"
    if issue.kind is IssueKind.PYTHON_VALUE:
        return (f"a traced value turned into a Python value ({issue.conversion}) {where}: "
                "tensors have no concrete value while tracing")
    return f"{issue.message} ({where}, while tracing `{module}`)"


def _opaque_target(library: str) -> str | None:
    """What to keep opaque for a problem in ``library`` (``pkg.mod.fn`` or ``pkg.mod.Cls.m``):
    the function, or the nn.Module class whose method it is (None: neither resolves)."""
    parts = library.split(".")
    for cut in (len(parts), len(parts) - 1):
        module_name, owner = ".".join(parts[: cut - 1]), parts[cut - 1] if cut > 1 else ""
        value = getattr(sys.modules.get(module_name), owner, None)
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            return f"{module_name}.{owner}"
        if cut == len(parts) and callable(value) and not isinstance(value, type):
            return library
    return None


def _library_name(site: SourceSpan, file: _File) -> str:
    """``timm.layers.padding.pad_same``: the module and the function enclosing ``site``."""
    found = module_named_by_file(site.file)
    qualname = qualname_at(found[1], site.file, site.line) if found is not None else None
    if qualname is None:
        tree = file.tree_of(site.file)
        qualname = _enclosing_function(tree, site.line) if tree is not None else None
    module = found[0] if found is not None else Path(site.file).stem
    return f"{module}.{qualname or site.function}"


def _enclosing_function(tree: ast.AST, line: int) -> str | None:
    """The qualified name of the innermost function around ``line`` (``Conv2dSame.forward``)."""
    best: str | None = None

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                child.lineno <= line <= (child.end_lineno or child.lineno)
            ):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    best = name
                visit(child, f"{name}.")

    visit(tree, "")
    return best


def _target_text(node: Node) -> str:
    """The name a user would write: ``torch.nn.functional.gelu``, not ``torch._C._nn.gelu``."""
    target = node.target
    name = getattr(target, "__name__", None)
    if node.op == "call_function" and name:
        for public, namespace in (("torch.nn.functional", torch.nn.functional), ("torch", torch)):
            if getattr(namespace, name, None) is target:
                return f"{public}.{name}"
    try:
        return Node._pretty_print_target(target)
    except Exception:
        return str(target)


def _node_info(node: Node, gm: GraphModule | None, backward: dict[str, str]) -> NodeInfo:
    span = node.meta.get("source")
    info = NodeInfo(
        node.name, node.op, _target_text(node), _format_arg(node.args),
        _format_arg(node.kwargs), [u.name for u in node.users],
        to_span(span) if span is not None else None,
    )
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        info.shape = [int(d) for d in meta.shape]
        info.dtype = str(meta.dtype).replace("torch.", "")
    module_stack = node.meta.get("nn_module_stack")
    if node.op == "call_module":
        info.module_path = str(node.target)
        try:
            if gm is None:
                raise AttributeError(node.target)
            submodule = gm.get_submodule(node.target)
            cls = type(submodule)
            info.module_type = f"{cls.__module__}.{cls.__qualname__}"
            info.module_params = sum(p.numel() for p in submodule.parameters())
        except AttributeError:
            pass
    elif module_stack:
        info.module_path = next(reversed(module_stack.values()))[0]
    info.backward = backward.get(node.name)
    named = named_arguments(node, gm)
    info.named_args = [[name, value] for name, value in named] if named else None
    return info


def _module_graphs(namespace: dict[str, Any]) -> list[tuple[str, Graph]]:
    """fxcore graphs bound to module globals (built by passes at import), each once."""
    found: dict[int, tuple[str, Graph]] = {}
    for name, value in namespace.items():
        graph = value.graph if isinstance(value, GraphModule) else value
        if isinstance(graph, Graph):
            found.setdefault(id(graph), (name, graph))
    return list(found.values())


def _graph_report(name: str, graph: Graph) -> ModuleReport:
    """A module-level graph's nodes, so hovering the pass's lines works too."""
    try:
        code = graph.python_code(root_module="self").src
    except Exception:
        code = None
    owner = graph.owning_module if isinstance(graph.owning_module, GraphModule) else None
    return ModuleReport(name, TraceStatus.TRACED, len(graph.nodes), None,
                        [_node_info(n, owner, {}) for n in graph.nodes], code)
