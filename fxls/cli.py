"""The ``fxls`` command: ``check`` (lint files), ``graph`` (print one traced graph), ``serve``."""

from __future__ import annotations

import fxls.startup_path  # noqa: F401  first: the workspace leaves sys.path

# isort: split
import argparse
import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from fxls.analysis_runs.request import AnalysisRequest
from fxls.analysis_runs.runs import analyze_many
from fxls.codes import CODES, Severity, code_selected, parse_code_list, unknown_codes
from fxls.environment import VersionAction
from fxls.output.json_format import format_json
from fxls.output.located import SourceCache
from fxls.output.sarif import format_sarif
from fxls.output.setting_problems import problem_lines, unique_problems
from fxls.output.statistics import collect_statistics, why_not_traced
from fxls.output.text import format_text
from fxls.project.files import Skipped, SkippedFile, find_python_files, skip_reason
from fxls.project.notebooks import (
    NOTEBOOK_SUFFIX,
    MalformedNotebook,
    NotebookCells,
    is_notebook,
    read_notebook,
)
from fxls.project.python_source import UndecodableSource, read_python_source
from fxls.project.settings import TARGET_NAMES, Settings, check_targets, load_settings
from fxls.report import Diagnostic, FileReport, ModuleReport, Span, TraceStatus
from fxls.result_cache import ResultCache, cache_disabled
from fxls.result_cache.check_use import CachedCheck
from fxls.result_cache.commands import cache_clean, cache_info

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _code_list(text: str) -> list[str]:
    codes = parse_code_list(text)
    unknown = unknown_codes(codes)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown diagnostic code or prefix: {unknown[0]}")
    return list(codes)


def _target_list(text: str) -> list[str]:
    targets = [name.strip() for name in text.split(",") if name.strip()]
    if not targets:
        raise argparse.ArgumentTypeError(
            f"expected one or more of {', '.join(TARGET_NAMES)}, comma-separated")
    problem = check_targets(targets)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return targets


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fxls", description="FX traceability diagnostics for PyTorch models."
    )
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="trace every nn.Module in the files and report")
    check.add_argument("paths", nargs="*", default=["."], help="files or folders (default: .)")
    check.add_argument("--format", choices=["text", "json", "sarif"], default="text")
    check.add_argument("--select", type=_code_list, help="only these codes (prefixes allowed)")
    check.add_argument("--ignore", type=_code_list, help="never these codes")
    check.add_argument("--timeout", type=float, help="seconds per file (default 30)")
    check.add_argument(
        "--target", dest="targets", type=_target_list, metavar="TARGETS",
        help=f"the tracers the code must pass, comma-separated ({', '.join(TARGET_NAMES)}); "
        "overrides the project's `targets` (default: inferred from the code)")
    check.add_argument("--python", help="interpreter that runs the user code")
    check.add_argument("--jobs", type=int, default=0, help="files analysed at once")
    _add_policy_flags(check)
    check.add_argument("--no-progress", action="store_true", help="no progress bar")
    check.add_argument(
        "--no-cache", action="store_true",
        help="analyse every file, even one whose result is in the cache (neither read nor "
        "write the cache; FXLS_NO_CACHE=1 does the same)")
    check.add_argument(
        "--statistics", action="store_true",
        help="after the diagnostics, how many classes were traced, partial, not constructed "
        "or failed (per file and in total), and why each untraced one was not",
    )

    graph = commands.add_parser(
        "graph", help="print the traced graph of one module, or what an FX pass did to it")
    graph.add_argument("target", help="FILE::Class or FILE::pass (a class wins a tie)")
    graph.add_argument("--format", choices=["code", "table", "dot", "json", "html"],
                       default="code")
    graph.add_argument(
        "--target", dest="graph_target", choices=["export", "compile"],
        help="the graph that tracer made instead of the FX graph: export's ATen program "
        "(draft_export's where export fails), or dynamo's subgraphs and their breaks")
    graph.add_argument("--timeout", type=float)
    graph.add_argument("--python")
    _add_policy_flags(graph)
    graph.add_argument("--no-cache", action="store_true",
                       help="analyse the file even if its result is in the cache")

    cache = commands.add_parser("cache", help="the cache of results of unchanged files")
    cache.add_argument("action", choices=["info", "clean"],
                       help="info: its folder, entries and size; clean: remove every entry")

    serve = commands.add_parser("serve", help="run the language server")
    serve.add_argument("--stdio", action="store_true", help="speak LSP on stdio (default)")
    serve.add_argument("--tcp", action="store_true", help="listen on TCP instead")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=2087)
    return parser


def _add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """What analysed code may do beyond the sandbox: the user's to allow, never the
    repository's (its pyproject.toml cannot widen these)."""
    parser.add_argument("--allow-write", action="append", metavar="DIR",
                        help="a folder analysed code may write to (repeatable; any folder)")
    parser.add_argument("--allow-network", action="store_true",
                        help="let analysed code open network connections")


def _overrides(args: argparse.Namespace) -> dict[str, object]:
    overrides: dict[str, object] = {}
    if getattr(args, "select", None):
        overrides["select"] = args.select
    if getattr(args, "ignore", None):
        overrides["ignore"] = args.ignore
    if getattr(args, "targets", None):  # `fxls check --target` (graph's `target` is FILE::X)
        overrides["targets"] = args.targets
    if getattr(args, "timeout", None) is not None:  # 0 or nan too: said, not ignored
        overrides["timeout"] = args.timeout
    if getattr(args, "allow_write", None):
        overrides["allow_write"] = [os.path.abspath(folder) for folder in args.allow_write]
    if getattr(args, "allow_network", False):
        overrides["allow_network"] = True
    return overrides


def _read_requests(
    paths: list[str], overrides: dict[str, object],
    on_skipped: Callable[[Skipped], None] | None = None,
) -> list[AnalysisRequest | _Unread]:
    """A request per file; a file that could not be read or decoded is a request whose report
    is already known (:meth:`_Unread.report`); a path that is not a regular file is left out
    and given to ``on_skipped`` (default: a line on stderr)."""
    requests: list[AnalysisRequest | _Unread] = []
    for path in paths:
        try:
            source, cells = _read_source(path)
        except (UndecodableSource, MalformedNotebook) as error:
            requests.append(_Unread(path, error.text, load_settings(path, overrides),
                                    error.message, error.line, error.col, error.end_col))
            continue
        except SkippedFile as error:
            (on_skipped or _say_skipped)(Skipped(path, error.reason))
            continue
        except OSError as error:  # too large, unreadable: one FX100, the others are checked
            reason = getattr(error, "reason", None) or f"cannot read the file: {error.strerror}"
            requests.append(_Unread(path, "", load_settings(path, overrides), reason, 1, 0, 0))
            continue
        requests.append(AnalysisRequest(path, source, load_settings(path, overrides), cells))
    return requests


def _read_source(path: str) -> tuple[str, NotebookCells | None]:
    """The Python text fxls analyses of ``path``, and for a notebook where its cells are."""
    if is_notebook(path):
        notebook = read_notebook(path)
        return notebook.source, notebook.cells
    return read_python_source(path), None


def _say_skipped(skipped: Skipped) -> None:
    sys.stderr.write(f"fxls: {skipped.path}: skipped: {skipped.reason}\n")


@dataclass(slots=True)
class _Unread:
    """A file that cannot be read or decoded: its report is one FX100, made without running
    it."""

    path: str
    source: str  # decoded with replacement characters, to show positions in
    settings: Settings
    message: str
    line: int
    col: int
    end_col: int

    def report(self) -> FileReport:
        span = Span(os.path.realpath(self.path), self.line, self.line, self.col, self.end_col)
        diagnostic = Diagnostic("FX100", CODES["FX100"].severity, self.message, span)
        report = FileReport(self.path, [], [diagnostic])
        selected = code_selected("FX100", parse_code_list(self.settings.diagnostics.select),
                                 parse_code_list(self.settings.diagnostics.ignore))
        return report if selected else FileReport(self.path)


async def _analyze_all(
    requests: list[AnalysisRequest | _Unread], python: str, jobs: int, progress: _Progress,
    cache: CachedCheck | None = None,
) -> list[FileReport]:
    """Reports in request order; unread files are reported without the worker, and so are
    those whose result is in ``cache``."""
    readable = [r for r in requests if isinstance(r, AnalysisRequest)]

    def analyse(batch: list[AnalysisRequest]) -> Awaitable[list[FileReport]]:
        return analyze_many(batch, python=python, jobs=jobs,
                            on_done=lambda report: progress.advance(report.path))

    analysed = iter(await (analyse(readable) if cache is None
                           else cache.reports(readable, analyse, progress.advance)))
    return [r.report() if isinstance(r, _Unread) else next(analysed) for r in requests]


class _Progress:
    """A one-line progress bar on stderr, only on a terminal and for runs of several files."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done = total, 0
        self.enabled = enabled and total > 1 and sys.stderr.isatty()

    def advance(self, path: str) -> None:
        self.done += 1
        if self.enabled:
            width = 24
            filled = width * self.done // self.total
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(f"\r[{bar}] {self.done}/{self.total} {path[-40:]:<40}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()


def run_check(args: argparse.Namespace) -> int:
    # lexists: a named symbolic-link loop or broken link exists, and is said to be skipped
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    found = find_python_files(args.paths, (".py", NOTEBOOK_SUFFIX))
    for skipped in found.skipped:
        _say_skipped(skipped)
    requests = _read_requests(found.files, _overrides(args))
    setting_problems = unique_problems(p for r in requests for p in r.settings.problems)
    sys.stderr.write(problem_lines(setting_problems))
    progress = _Progress(len(requests), not args.no_progress)
    python = args.python or sys.executable
    cache = None if args.no_cache or cache_disabled() else CachedCheck(ResultCache.default(),
                                                                       python)
    try:
        reports = asyncio.run(_analyze_all(
            requests, python, args.jobs or os.cpu_count() or 1, progress, cache))
    finally:
        progress.close()
    sys.stderr.write(_targets_lines(reports))
    if cache is not None:
        sys.stderr.write(cache.summary(len(requests)))
    sources = SourceCache()
    for request in requests:
        sources.add(request.path, request.source,
                    request.cells if isinstance(request, AnalysisRequest) else None)
    sources.claim(reports)
    formatter = {"text": format_text, "json": format_json, "sarif": format_sarif}[args.format]
    statistics = collect_statistics(reports, sources.cells) if args.statistics else None
    sys.stdout.write(formatter(reports, sources, statistics, setting_problems))
    return EXIT_ERRORS if _has_errors(reports) else EXIT_OK


def _targets_lines(reports: list[FileReport]) -> str:
    """Which tracers were checked and why, once per distinct choice; nothing for the
    default (symbolic tracing alone, as fxls always did)."""
    lines = []
    for report in reports:
        if report.targets and not report.default_targets:
            line = f"fxls: targets {', '.join(report.targets)}: {report.targets_because}\n"
            if line not in lines:
                lines.append(line)
    return "".join(lines)


def _has_errors(reports: list[FileReport]) -> bool:
    return any(d.severity is Severity.ERROR for r in reports for d in r.diagnostics)


def run_graph(args: argparse.Namespace) -> int:
    from fxls.graph_view.module_graph import render_module
    from fxls.output.pass_graph import graphs_of, render_pass

    path, sep, class_name = args.target.rpartition("::")
    if not sep or not path or not class_name:
        raise UsageError("expected FILE::Class or FILE::pass, e.g. model.py::Encoder")
    if not os.path.lexists(path):
        raise UsageError(f"no such file: {path}")
    reason = skip_reason(path)
    if reason is not None:
        raise UsageError(f"cannot read {path}: {reason}")
    overrides = _overrides(args)
    if args.graph_target:  # that tier runs for the class, whatever the project targets
        overrides["targets"] = [args.graph_target]
    (request,) = _read_requests([path], overrides)
    sys.stderr.write(problem_lines(request.settings.problems))
    if isinstance(request, _Unread):
        raise UsageError(f"cannot read {path}: {request.message}")
    python = args.python or sys.executable
    # the same cache as check's: a file check saw unchanged draws without a new analysis
    cache = None if args.no_cache or cache_disabled() else CachedCheck(ResultCache.default(),
                                                                       python)
    (report,) = asyncio.run(_analyze_all([request], python, 1, _Progress(1, False), cache))
    if cache is not None:
        sys.stderr.write(cache.summary(1))
    module = next((m for m in report.modules if m.name == class_name), None)
    found_pass = next((p for p in report.passes if p.name == class_name), None)
    if module is None and found_pass is not None:
        if not found_pass.runs:
            sys.stderr.write(f"{found_pass.name}: not run, no graph to run it on\n")
            return EXIT_ERRORS
        sys.stdout.write(render_pass(found_pass, args.format, graphs_of(report),
                                     report.diagnostics))
        return EXIT_OK
    if module is None:
        names = ", ".join(m.name for m in report.modules) or "none"
        failures = [d for d in report.diagnostics if d.code in ("FX100", "FX102")]
        reason = f" ({failures[0].message})" if failures else ""
        passes = ", ".join(p.name for p in report.passes) or "none"
        raise UsageError(f"no module or pass {class_name} in {path}{reason}; modules: "
                         f"{names}; passes: {passes}")
    if args.graph_target:
        return _write_target_graph(module, report, args.format, args.graph_target)
    if not module.nodes:
        sys.stderr.write(_no_graph_message(module, report))
        return EXIT_ERRORS
    sys.stdout.write(render_module(module, args.format, report))
    return EXIT_OK


def _write_target_graph(module: ModuleReport, report: FileReport, fmt: str,
                        target: str) -> int:
    from fxls.graph_view.target_graph import render_target

    rendered = render_target(module, fmt, report, target)
    if rendered is None:
        status = module.targets.get(target, "not run")
        sys.stderr.write(f"{module.name}: {target} {status}, no graph to show\n")
        return EXIT_ERRORS
    sys.stdout.write(rendered)
    return EXIT_OK


def _no_graph_message(module: ModuleReport, report: FileReport) -> str:
    """Why ``module`` has no graph, and what makes fxls build it."""
    name = module.name
    if module.status.has_graph:
        return f"{name}: {module.verdict()}, but its graph has no nodes to show\n"
    status = "not constructed" if module.status is TraceStatus.SKIPPED else "failed"
    why = why_not_traced(module, report)
    lines = [f"{name}: {status}, no graph to show", f"  why: {why}"]
    about = next((d for d in report.diagnostics if d.module == name), None)
    if module.reason and about is not None:  # the diagnostic says where, and more
        lines.append(f"  see: {_shown_path(about.span.file, report.path)}:{about.span.line}: "
                     f"{about.code} {about.message}")
    if "fxls: skip" not in why:
        lines += [
            "  to trace it, tell fxls how to build it, either:",
            f"    - its constructor arguments: `# fxls: init {_init_hint(module, report)}` "
            f"above `class {name}`",
            "    - a function that builds it, in pyproject.toml: `[tool.fxls]` "
            '`entry_points = ["pkg.models:build_model"]`',
        ]
    return "\n".join(lines) + "\n"


def _shown_path(file: str, report_path: str) -> str:
    """``file`` as the user named it when it is the analysed file, else as recorded."""
    same = os.path.realpath(file) == os.path.realpath(report_path)
    return report_path if same else file


def _init_hint(module: ModuleReport, report: FileReport) -> str:
    """``a=..., b=...`` with the constructor's missing parameters when the analysis named
    them (FX101), else a placeholder."""
    for d in report.diagnostics:
        parameters = d.data.get("parameters") if d.module == module.name else None
        if parameters and isinstance(parameters, list):
            return ", ".join(f"{p}=..." for p in parameters)
    return "<name>=<value>, ..."


def run_cache(args: argparse.Namespace) -> int:
    cache = ResultCache.default()
    sys.stdout.write(cache_info(cache) if args.action == "info" else cache_clean(cache))
    return EXIT_OK


def run_serve(args: argparse.Namespace) -> int:
    from fxls.server.app import serve

    serve(tcp=args.tcp, host=args.host, port=args.port)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and EXIT_USAGE
    handlers = {"check": run_check, "graph": run_graph, "cache": run_cache, "serve": run_serve}
    try:
        return handlers[args.command](args)
    except UsageError as error:
        sys.stderr.write(f"fxls: error: {error}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
