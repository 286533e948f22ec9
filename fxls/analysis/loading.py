"""Execute a user's file as its module (never as ``__main__``) and find its nn.Module classes."""

from __future__ import annotations

import ast
import builtins
import errno
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import io
import linecache
import os
import re
import sys
import tempfile
import textwrap
import tokenize
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxcore.source import SourceSpan, spans_of_traceback
from fxls.analysis.packages import ModuleLocation, import_path
from fxls.project.source_text import SourceText, source_text


@dataclass
class LoadFailure:
    message: str
    span: SourceSpan
    #: where the error really was when that is another file (a sibling, a package __init__)
    related: list[SourceSpan] = field(default_factory=list)


@dataclass
class LoadResult:
    """The executed module (None when nothing of the file ran) and what went wrong."""

    module: types.ModuleType | None
    failures: list[LoadFailure] = field(default_factory=list)


def execute_file(
    path: Path,
    source: str,
    tree: ast.Module | None,
    location: ModuleLocation,
    extra_paths: tuple[str, ...] = (),
) -> LoadResult:
    """Import ``source`` (the possibly unsaved text of ``path``) as the module ``location``
    names, as ``python -m`` would: parent packages are imported (their ``__init__`` runs and
    may import this module: it then gets ``source``), siblings come from disk, and the file
    runs once. An import of the file that fails is an FX100 at that import, and the rest of
    the file still runs; any other error stops the file there (what ran is still analysed)."""
    sys.dont_write_bytecode = True  # never leave __pycache__ folders in the user's project
    sys.path[:] = import_path(location, extra_paths, sys.path)
    _remember_source(str(path), source)
    runner = _DocumentRunner(str(path), source, tree)
    if tree is None:
        runner.report_syntax_error()
        return LoadResult(None, runner.failures)
    finder = _DocumentFinder(location, str(path), runner)
    sys.meta_path.insert(0, finder)
    try:
        module = _import(location, runner)
    finally:
        runner.interpreter.repair()  # a parent package's code may have broken it too
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    return LoadResult(module if runner.started else None, runner.failures)


def _remember_source(filename: str, source: str) -> None:
    """What ``inspect.getsource``, tracebacks and the analysis' own reads of the file get
    through linecache: the analysed text, not the file on disk (an unsaved buffer; a
    notebook, whose file is JSON). No mtime: ``linecache.checkcache`` keeps the entry."""
    text = source_text(source)
    ends = [*text.line_starts[1:], len(source)]
    lines = [source[start:end] for start, end in zip(text.line_starts, ends, strict=True)
             if start < end]
    linecache.cache[filename] = (len(source), None, lines, filename)


class InterpreterState:
    """What the analysis' own code needs of the interpreter, taken before the file runs.

    User code that empties ``sys.modules`` or replaces ``builtins.__import__`` breaks every
    import the analysis makes afterwards (its lazy imports, the report's): ``repair`` puts
    them back after each statement of the file and says what it found broken."""

    #: modules whose absence means ``sys.modules`` was emptied or cut (cheap to check)
    _SENTINELS = ("sys", "builtins", "importlib", "json", "torch", "fxcore", __name__)

    def __init__(self) -> None:
        self.modules = dict(sys.modules)
        self.import_function = builtins.__import__
        self.meta_path = list(sys.meta_path)

    def repair(self) -> list[str]:
        """Put back what user code took; each thing found broken, in words."""
        broken = []
        if builtins.__import__ is not self.import_function:
            builtins.__import__ = self.import_function
            broken.append("replaced `builtins.__import__`")
        if any(name in self.modules and name not in sys.modules for name in self._SENTINELS):
            missing = [name for name in self.modules if name not in sys.modules]
            for name in missing:
                sys.modules[name] = self.modules[name]
            examples = ", ".join(f"`{n}`" for n in self._SENTINELS[:4] if n in missing)
            broken.append(f"removed {len(missing)} modules from `sys.modules` ({examples}...)")
        lost = [finder for finder in self.meta_path if finder not in sys.meta_path]
        if lost:
            sys.meta_path[:0] = lost
            broken.append("removed import machinery from `sys.meta_path`")
        if len(sys.modules) != len(self.modules):  # what the file imported so far is kept
            self.modules = dict(sys.modules)
        if len(sys.meta_path) != len(self.meta_path):
            self.meta_path = list(sys.meta_path)
        return broken


def _import(location: ModuleLocation, runner: _DocumentRunner) -> types.ModuleType | None:
    try:
        return importlib.import_module(location.name)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a parent package's __init__ (or what it imports) failed
        failure = _package_failure(error, location, runner)
        took_from_the_file = isinstance(error, ImportError) and error.name == location.name
    if runner.started:  # the package imported this file before it failed
        _add_unless_said(failure, took_from_the_file, runner.failures)
        return sys.modules.get(location.name) or runner.module
    # run the file anyway, inside stand-ins for the packages that could not be imported
    _stand_in_packages(location)
    try:
        return importlib.import_module(location.name)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return runner.module
    finally:
        _add_unless_said(failure, took_from_the_file, runner.failures)


def _add_unless_said(failure: LoadFailure, took_from_the_file: bool,
                     failures: list[LoadFailure]) -> None:
    """The package's failure, unless the file's own line says it: the file raised the same
    error where it imports what failed, or the package could not take a name from the file
    that had raised before defining it (``from .core import Config``)."""
    text = failure.message.partition(" raised: ")[2]
    if failures and (took_from_the_file
                     or any(f.message.endswith(f": {text}") for f in failures)):
        return
    failures.insert(0, failure)


def _package_failure(
    error: BaseException, location: ModuleLocation, runner: _DocumentRunner
) -> LoadFailure:
    package = location.package or location.name
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    spans = [s for s in spans_of_traceback(error.__traceback__) if s.file != runner.filename]
    return LoadFailure(f"importing the package `{package}` raised: {text}", runner.first_line(),
                       spans[-1:])


def _stand_in_packages(location: ModuleLocation) -> None:
    parts = location.package.split(".") if location.package else []
    folder = Path(location.import_root)
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        folder = folder / parts[depth - 1]
        if name in sys.modules:
            continue
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        if depth > 1:
            setattr(sys.modules[".".join(parts[: depth - 1])], parts[depth - 1], package)


class _DocumentFinder(importlib.abc.MetaPathFinder):
    """Answers the import of the analysed module with the document's text."""

    def __init__(self, location: ModuleLocation, filename: str, runner: _DocumentRunner) -> None:
        self.location, self.filename, self.runner = location, filename, runner

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.location.name:
            return None
        spec = importlib.util.spec_from_file_location(
            fullname, self.filename, loader=_DocumentLoader(self.runner),
            submodule_search_locations=(
                [str(Path(self.filename).parent)] if self.location.is_package_init else None),
        )
        return spec


class _DocumentLoader(importlib.abc.Loader):
    def __init__(self, runner: _DocumentRunner) -> None:
        self.runner = runner

    def create_module(self, spec: Any) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        self.runner.run(module)


class _DocumentRunner:
    """Runs the document's statements one by one, so that one failing import does not keep
    the rest of the file from running."""

    def __init__(self, filename: str, source: str, tree: ast.Module | None) -> None:
        self.filename, self.source, self.tree = filename, source, tree
        self.text = source_text(source)
        self.failures: list[LoadFailure] = []
        self.module: types.ModuleType | None = None
        self.interpreter = InterpreterState()

    @property
    def started(self) -> bool:
        return self.module is not None

    def report_syntax_error(self) -> None:
        try:
            compile(self.source, self.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:  # ValueError: a lone surrogate (3.11)
            if not isinstance(error, SyntaxError):
                error = SyntaxError(str(error))
            if error.lineno is None:
                self._place_uncompilable(error)
            self.failures.append(_syntax_failure(error, self.filename, self.text))
        except (MemoryError, RecursionError) as error:  # nested too deeply to parse
            self.failures.append(_nesting_failure(error, self._deepest_statement()))

    def _place_uncompilable(self, error: SyntaxError) -> None:
        """A null byte or a lone surrogate: Python does not say where; the first one."""
        culprit = _UNCOMPILABLE.search(self.source)
        if culprit is not None:
            before = source_text(self.source[: culprit.start()])
            error.lineno = before.line_count
            error.offset = len(before.line(before.line_count)) + 1

    def _deepest_statement(self) -> SourceSpan:
        """The statement Python could not parse for its depth: of the longest statements,
        the first that fails alone (Python's error does not say where)."""
        statements = _logical_lines(self.source)
        statements.sort(key=lambda item: -item[0])
        for _, (line, col, end_line, end_col) in statements[:3]:
            alone = textwrap.dedent(self.text.text_at(SourceSpan("", line, end_line, col,
                                                                 end_col)))
            try:
                ast.parse(alone)
            except (MemoryError, RecursionError):
                return SourceSpan(self.filename, line, end_line, col, end_col)
            except (SyntaxError, ValueError):
                continue
        if statements:
            line, col, end_line, end_col = statements[0][1]
            return SourceSpan(self.filename, line, end_line, col, end_col)
        return self.first_line()

    def first_line(self) -> SourceSpan:
        return SourceSpan(self.filename, 1, 1, 0, self.text.byte_length(1))

    def run(self, module: types.ModuleType) -> None:
        if self.module is not None:  # imported a second time (a stand-in retry): run once
            return
        self.module = module
        self.interpreter.repair()  # from now on, with this module in sys.modules
        assert self.tree is not None
        namespace = module.__dict__
        flags = 0
        unbound: set[str] = set()  # names that failed imports would have bound
        for statement in self.tree.body:
            try:
                code = compile(ast.Module([statement], []), self.filename, "exec",
                               flags=flags, dont_inherit=True)
            except SyntaxError as error:
                self.failures.append(_syntax_failure(error, self.filename, self.text))
                return
            except (MemoryError, RecursionError) as error:
                self.failures.append(_nesting_failure(error, _statement_span(
                    statement, self.filename)))
                return
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                flags |= _future_flags(statement)
            try:
                exec(code, namespace)
            except KeyboardInterrupt:
                raise
            except BaseException as error:
                self._repair(statement)
                if isinstance(statement, ast.Import | ast.ImportFrom) and isinstance(
                    error, ImportError
                ):
                    self.failures.append(self._import_failure(statement, error))
                    unbound.update(_bound_names(statement))
                    continue
                if isinstance(error, NameError) and getattr(error, "name", None) in unbound:
                    continue  # follows from a failed import, already reported
                self.failures.append(LoadFailure(
                    _describe(error), _failure_span(error, self.filename) or self.first_line(),
                    _foreign_site(error, self.filename)))
                return
            self._repair(statement)

    def _repair(self, statement: ast.stmt) -> None:
        """After a statement: what it broke of the interpreter is put back, and said (an
        import the statement made may have done it: the file's line is the statement)."""
        broken = self.interpreter.repair()
        if broken:
            self.failures.append(LoadFailure(
                f"this line {' and '.join(broken)}, which the analysis needs: fxls undid it "
                "and analysed the rest of the file",
                _statement_span(statement, self.filename)))

    def _import_failure(self, statement: ast.stmt, error: ImportError) -> LoadFailure:
        text = "".join(traceback.format_exception_only(type(error), error)).strip()
        span = SourceSpan(self.filename, statement.lineno, statement.end_lineno or
                          statement.lineno, statement.col_offset, statement.end_col_offset or 0)
        name = error.name or _imported_module(statement)
        missing = f" `{name}`" if name else ""
        return LoadFailure(
            f"the import of{missing} failed: {text}; the rest of the file is analysed "
            "without it", span, _foreign_site(error, self.filename))


def _imported_module(statement: ast.stmt) -> str | None:
    """The module an import statement that failed was importing: for ``import a, b``, the
    first one that did not make it into ``sys.modules``."""
    if isinstance(statement, ast.ImportFrom):
        return "." * statement.level + (statement.module or "")
    if isinstance(statement, ast.Import):
        names = [alias.name for alias in statement.names]
        return next((name for name in names if name not in sys.modules), names[-1])
    return None


def _future_flags(statement: ast.ImportFrom) -> int:
    import __future__

    flags = 0
    for alias in statement.names:
        feature = getattr(__future__, alias.name, None)
        flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _bound_names(statement: ast.Import | ast.ImportFrom) -> set[str]:
    names = set()
    for alias in statement.names:
        if alias.asname:
            names.add(alias.asname)
        elif isinstance(statement, ast.Import):
            names.add(alias.name.partition(".")[0])
        else:
            names.add(alias.name)
    return names


def _foreign_site(error: BaseException, filename: str) -> list[SourceSpan]:
    """The innermost user frame of ``error`` when it is in another file than ``filename``."""
    spans = spans_of_traceback(error.__traceback__)
    if spans and spans[-1].file != filename:
        return [spans[-1]]
    return []


def _syntax_failure(error: SyntaxError, filename: str, text: SourceText) -> LoadFailure:
    """Python's offsets in a SyntaxError of a str source count characters, 1-based."""
    line = error.lineno or 1
    col = max((error.offset or 1) - 1, 0)
    end_line = error.end_lineno or line
    end_col = max((error.end_offset or (col + 2)) - 1, 0)
    if end_line == line:
        end_col = max(end_col, col + 1)
    # Python may point one past a line or the text (unindent, EOF): clamp into the text
    line, end_line = min(line, text.line_count), min(max(end_line, line), text.line_count)
    byte_col = min(text.char_to_byte_col(line, col), text.byte_length(line))
    byte_end = text.char_to_byte_col(end_line, end_col)
    if (end_line, byte_end) <= (line, byte_col):
        end_line, byte_end = line, min(byte_col + 1, text.byte_length(line))
    if byte_end <= byte_col and end_line == line:  # at the end of the line: all of it
        byte_col, byte_end = text.indent_bytes(line), text.byte_length(line)
    return LoadFailure(
        f"{type(error).__name__}: {error.msg}",
        SourceSpan(filename, line, end_line, byte_col, byte_end),
    )


#: characters a str source cannot hold for compile(): null bytes, lone surrogates
_UNCOMPILABLE = re.compile("[\x00\ud800-\udfff]")


def _nesting_failure(error: BaseException, span: SourceSpan) -> LoadFailure:
    detail = str(error) or "the parser ran out of memory"
    return LoadFailure(f"{type(error).__name__}: {detail}: this statement is nested too deeply "
                       "for Python to compile it", span)


def _statement_span(statement: ast.stmt, filename: str) -> SourceSpan:
    return SourceSpan(filename, statement.lineno, statement.end_lineno or statement.lineno,
                      statement.col_offset, statement.end_col_offset or 0)


_NOT_CODE = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENDMARKER, tokenize.ENCODING}


def _logical_lines(source: str) -> list[tuple[int, tuple[int, int, int, int]]]:
    """(token count, span) of each statement line of ``source`` (tokenizing is not
    recursive: it works where parsing runs out of stack); columns in UTF-8 bytes."""
    text = source_text(source)
    found: list[tuple[int, tuple[int, int, int, int]]] = []
    count, start, end = 0, (0, 0), (0, 0)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
            if token.type == tokenize.NEWLINE and count:
                found.append((count, (start[0], text.char_to_byte_col(*start), end[0],
                                      text.char_to_byte_col(*end))))
                count = 0
            elif token.type not in _NOT_CODE:
                if not count:
                    start = token.start
                count, end = count + 1, token.end
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _describe(error: BaseException) -> str:
    from fxls.worker.api import ProcessExit

    if isinstance(error, ProcessExit):
        return (f"the file called os._exit({error.exit_code!r}) while being imported: it ends "
                "the process at once (no cleanup, no report); fxls stopped it there")
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    return f"the file raised while being imported: {text}{_limit_hint(error)}"


def _limit_hint(error: BaseException) -> str:
    """Why a write failed for lack of space, when the job's own temporary folder is full
    (its size is the ``tmp_limit_mb`` setting)."""
    if not isinstance(error, OSError) or error.errno != errno.ENOSPC:
        return ""
    folder = tempfile.gettempdir()
    try:
        stats = os.statvfs(folder)
    except OSError:
        return ""
    if stats.f_bavail > 0:
        return ""
    size_mb = stats.f_blocks * stats.f_frsize // (1024 * 1024)
    return (f" (the analysis' temporary folder is full: it holds {size_mb} MB, "
            "`tmp_limit_mb` in [tool.fxls])")


def _failure_span(error: BaseException, filename: str) -> SourceSpan | None:
    """The innermost frame of ``filename`` in ``error``'s traceback."""
    own = [s for s in spans_of_traceback(error.__traceback__) if s.file == filename]
    return own[-1] if own else None


def parse_source(source: str) -> ast.Module | None:
    """``source`` parsed, or None where Python cannot parse it (executing it says why)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def class_definitions(tree: ast.AST | None) -> dict[str, ast.ClassDef]:
    """Class definitions of a parsed file by name (the first one of each name)."""
    found: dict[str, ast.ClassDef] = {}
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, node)
    return found


def module_classes(module: types.ModuleType, definitions: dict[str, ast.ClassDef]) -> list[type]:
    """nn.Module subclasses defined in ``module``, in source order."""
    import torch

    found: list[tuple[int, type]] = []
    for value in list(vars(module).values()):
        if (
            inspect.isclass(value)
            and issubclass(value, torch.nn.Module)
            and value.__module__ == module.__name__
        ):
            definition = definitions.get(value.__name__)
            found.append((definition.lineno if definition is not None else 10**9, value))
    found.sort(key=lambda item: item[0])
    return [cls for _, cls in found]


def class_span(
    cls: type, filename: str, source: str, definitions: dict[str, ast.ClassDef]
) -> SourceSpan:
    """The class name in ``class Name(...)``."""
    node = definitions.get(cls.__name__)
    if node is None:
        return SourceSpan(filename, 1, 1, 0, 0)
    text = source_text(source)
    line = text.line(node.lineno)
    start = line.find(node.name, line.find("class"))
    byte_start = text.char_to_byte_col(node.lineno, start)
    return SourceSpan(filename, node.lineno, node.lineno, byte_start,
                      text.char_to_byte_col(node.lineno, start + len(node.name)))
