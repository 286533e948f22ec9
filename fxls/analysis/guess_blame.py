"""Whether a trace problem came from fxls's own guess rather than from the user's code.

A class built with inferred arguments holds values fxls made (``stand_ins``): guessed ints,
stand-in modules. A problem is the guess's when, at the expression that raised (or one of
the user frames that led there), such a value is found where it cannot serve — decided by
where the failing value came from, never by the message:

- an exception at an expression that calls, measures (``len``), iterates, indexes or reads
  a missing attribute of a guessed value stored on the module (``self.backbone(x)`` with
  ``backbone=32``; ``self.transform.postprocess(...)`` on a stand-in);
- any problem whose expression treats a stand-in's output as a container, directly or through
  the local variables it was assigned to (``list(features.values())``, ``a, b = m(x)``, an
  anchor generator's check on the maps ``features`` held): a real module returns a dict or
  a tuple there, the stand-in returned its input.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from fxcore._module_state import restore, snapshot
from fxcore.recovering import IssueKind, TraceIssue, trace_collecting_issues
from fxcore.source import SourceSpan
from fxls.analysis.stand_ins import GuessedInt, ShapedStandIn, StandIn, is_guess

_CONTAINER_METHODS = ("values", "items", "keys")
_ITERATING_CALLS = ("list", "tuple", "enumerate", "zip", "iter", "sorted", "reversed", "dict",
                    "set", "len")
#: ``d.update(e)``, ``l.extend(e)``: methods whose argument is taken as a container
_FILLING_METHODS = ("update", "extend")
#: how many assignments back a local variable is followed to a stand-in's output
_ASSIGNMENT_DEPTH = 4
#: the check's trace searches as the real one does (a guess's problem may lie past a guard
#: clause the search gets past), in less time
_RETRACES, _SECONDS = 24, 2.0


@dataclass(frozen=True)
class Blame:
    """The guess a trace problem came from, and what the code did with it."""

    attribute: str  # as the code reads it: "self.backbone"
    use: str  # "is called", "is given to len()", "has no `postprocess`", ...
    span: SourceSpan
    issue: TraceIssue
    #: the guessed value itself (the constructor argument it was, or holds it)
    value: Any = None
    #: what was done with it: "call", "len", "iterate", "index", "attribute", "container"
    misuse: str = "container"

    def describe(self) -> str:
        where = f"{self.span.file.rsplit('/', 1)[-1]}:{self.span.line}"
        if isinstance(self.value, GuessedInt):
            guess = f"the guessed size {int(self.value)}"
        elif isinstance(self.value, StandIn):
            guess = "a stand-in module"
        else:
            guess = "a guessed value"
        return f"`{self.attribute}` ({guess}) {self.use} at {where}"


def first_blame(issues: list[TraceIssue], root: torch.nn.Module,
                sources: dict[str, str] | None = None) -> Blame | None:
    """The first problem of a trace that a guess caused, if any (``sources``: the text of
    files being edited, by file name; others are read as Python reads them)."""
    for issue in issues:
        found = blame(issue, root, sources)
        if found is not None:
            return found
    return None


def blame(issue: TraceIssue, root: torch.nn.Module, sources: dict[str, str] | None = None
          ) -> Blame | None:
    """The guess ``issue`` came from, or None when it is the code's own problem."""
    owners = _owners(root, issue.module_path)
    spans = list(dict.fromkeys([*([issue.span] if issue.span else []), *reversed(issue.stack)]))
    for depth, span in enumerate(spans):
        located = _located(span, (sources or {}).get(span.file))
        if located is None:
            continue
        function, nodes = located
        if depth == 0 and issue.kind is IssueKind.EXCEPTION:
            found = _misused_guess(nodes, function, owners)
            if found is not None:
                return Blame(found[0], found[1][1], span, issue, found[2], found[1][0])
        # a shaped stand-in returns a container: only an exception says it was not the right one
        found = _stand_in_container(nodes, function, owners,
                                    shaped_too=issue.kind is IssueKind.EXCEPTION)
        if found is not None:
            return Blame(found[0], "returned its input where the code takes a container of "
                         "outputs", span, issue, found[1])
    return None


def holds_guesses(root: torch.nn.Module) -> bool:
    """Whether the model's own modules (not torch's layers, which keep guessed sizes as
    sizes) store a guessed value: only then can a trace fail on one."""
    for module in root.modules():
        if type(module).__module__.startswith("torch."):
            continue
        if any(is_guess(v) for v in (*vars(module).values(), *module._modules.values())):
            return True
    return False


def trace_blame(root: torch.nn.Module, sources: dict[str, str] | None = None) -> Blame | None:
    """Trace ``root`` (a short search) and say whether a problem came from a guess. The
    modules are left as they were (a forward may store a trace's values in them)."""
    if not holds_guesses(root):
        return None
    pristine, training = snapshot(root), root.training
    root.eval()  # as the trace of the class will be, unless the project traces in train mode
    try:
        trace = trace_collecting_issues(root, max_retraces=_RETRACES, time_budget=_SECONDS)
    except (Exception, SystemExit):  # the real trace reports it
        return None
    finally:
        restore(pristine)
        root.train(training)
    return first_blame(trace.issues, root, sources)


def _owners(root: torch.nn.Module, path: str) -> list[Any]:
    """The modules a frame's ``self`` may be: the one being traced and those above it."""
    owners: list[Any] = []
    module: Any = root
    owners.append(module)
    for part in path.split(".") if path else ():
        module = _member(module, part)
        if module is None:
            break
        owners.insert(0, module)
    return owners


_MISSING = object()


def _member(obj: Any, name: str) -> Any:
    """``obj.name`` without running code: a module's tables or the instance's own dict."""
    found: Any = _MISSING
    if isinstance(obj, torch.nn.Module):
        for table in ("_modules", "_parameters", "_buffers"):
            values = obj.__dict__.get(table) or {}
            if name in values:
                found = values[name]
                break
    if found is _MISSING:
        found = getattr(obj, "__dict__", {}).get(name, _MISSING)
    return None if found is _MISSING else found


# -- the failing expression -----------------------------------------------------------------

_trees: dict[tuple[str, int], ast.Module | None] = {}


def _tree(file: str, source: str | None) -> ast.Module | None:
    text = source if source is not None else "".join(linecache.getlines(file))
    key = (file, hash(text))
    if key not in _trees:
        try:
            _trees[key] = ast.parse(text)
        except (SyntaxError, ValueError):
            _trees[key] = None
    return _trees[key]


def _located(span: SourceSpan, source: str | None) -> tuple[ast.AST, list[ast.AST]] | None:
    """The function holding ``span`` and the expressions inside the span (of a loop or a
    comprehension spanned whole: what it iterates)."""
    tree = _tree(span.file, source)
    if tree is None:
        return None
    functions = [n for n in ast.walk(tree)
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.lineno <= span.line <= (n.end_lineno or n.lineno)]
    if not functions:
        return None
    function = min(functions, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    nodes = [n for n in ast.walk(function) if isinstance(n, ast.expr | ast.For)
             and _inside(n, span)]
    outermost = [n for n in nodes if not any(o is not n and _inside_node(n, o) for o in nodes)]
    narrowed: list[ast.AST] = []
    for node in outermost:
        narrowed.append(node.iter if isinstance(node, ast.For) else node)
    return function, narrowed


def _inside(node: ast.AST, span: SourceSpan) -> bool:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    return (span.line, span.col) <= start and end <= (span.end_line, span.end_col)


def _inside_node(node: ast.AST, outer: ast.AST) -> bool:
    return ((outer.lineno, outer.col_offset)  # type: ignore[attr-defined]
            <= (node.lineno, node.col_offset)  # type: ignore[attr-defined]
            and (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
            <= (outer.end_lineno, outer.end_col_offset))  # type: ignore[attr-defined]


def _parents(nodes: list[ast.AST]) -> dict[ast.AST, ast.AST]:
    return {child: node for top in nodes for node in ast.walk(top)
            for child in ast.iter_child_nodes(node)}


def _chain(node: ast.AST) -> list[str] | None:
    """``self.a.b`` as ``["a", "b"]``; None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and names:
        return names
    return None


def _resolve(names: list[str], owners: list[Any]) -> Any:
    for owner in owners:
        value: Any = owner
        for name in names:
            value = _member(value, name)
            if value is None:
                break
        if value is not None:
            return value
    return None


def _walk(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    for top in nodes:
        yield from ast.walk(top)


def _misused_guess(nodes: list[ast.AST], function: ast.AST, owners: list[Any]
                   ) -> tuple[str, tuple[str, str], Any] | None:
    """A guessed value stored on the module, used in the failing expression as it cannot
    serve: (how the code reads it, the use, the value)."""
    parents = _parents([function])
    assignments = _assignments(function)
    for node in _walk(nodes):
        found = _guess_read(node, assignments, owners)
        if found is None:
            continue
        use = _misuse(node, parents.get(node), found[1])
        if use is not None:
            return found[0], use, found[1]
    return None


def _guess_read(node: ast.AST, assignments: dict[str, list[tuple[ast.expr, bool]]],
                owners: list[Any]) -> tuple[str, Any] | None:
    """The guess ``node`` reads: ``self.a.b`` stored on the module, or a local variable
    assigned from one (``for stage in self.stages``: an item of a guessed sequence)."""
    names = _chain(node)
    if names is not None:
        value = _resolve(names, owners)
        return ("self." + ".".join(names), value) if is_guess(value) else None
    if not isinstance(node, ast.Name):
        return None
    for source, item in assignments.get(node.id, ()):
        names = _chain(source)
        value = _resolve(names, owners) if names is not None else None
        if not is_guess(value):
            continue
        if not item:
            return "self." + ".".join(names or ()), value
        if isinstance(value, tuple | list | torch.nn.ModuleList) and len(value):
            return f"an item of self.{'.'.join(names or ())}", value[0]
    return None


def _misuse(node: ast.AST, parent: ast.AST | None, value: Any) -> tuple[str, str] | None:
    """What the code does with ``value`` that a guess of its kind cannot do: (the kind of
    use, in words)."""
    module = isinstance(value, StandIn | torch.nn.ModuleList | torch.nn.Sequential)
    unsized = isinstance(value, GuessedInt | StandIn)  # no len(), no iteration
    if isinstance(parent, ast.Call) and parent.func is node:
        callable_guess = isinstance(value, StandIn) or value is StandIn
        return None if callable_guess else ("call", "is called")
    if isinstance(parent, ast.Call) and node in parent.args and isinstance(
            parent.func, ast.Name):
        if parent.func.id == "len" and unsized:
            return "len", "is given to len()"
        if parent.func.id in _ITERATING_CALLS and unsized:
            return "iterate", f"is iterated by {parent.func.id}()"
        return None
    if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
        return ("iterate", "is iterated") if unsized else None
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return "index", "is indexed"
    if isinstance(parent, ast.Attribute) and parent.value is node and (
            not module or _member(value, parent.attr) is None):
        return "attribute", f"has no `{parent.attr}`"
    return None


# -- a stand-in's output taken as a container -------------------------------------------------

def _stand_in_container(nodes: list[ast.AST], function: ast.AST, owners: list[Any],
                        shaped_too: bool) -> tuple[str, StandIn] | None:
    """The stand-in (as the code reads it) whose output the expressions take as a container,
    following local variables back through their assignments."""
    assignments = _assignments(function)
    parents = _parents([function])
    seen: set[str] = set()
    todo = [(n, 0) for n in nodes]
    while todo:
        top, depth = todo.pop()
        for node in ast.walk(top):
            taken = _taken_as_container(node, parents)
            if taken is not None:
                found = _stand_in_output(taken, assignments, owners)
                if found is not None and (shaped_too or not isinstance(found[1], ShapedStandIn)):
                    return found
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                    and node.id not in seen and depth < _ASSIGNMENT_DEPTH):
                seen.add(node.id)
                # an item unpacked from a value is not that value (``a, b = m(x)``)
                todo.extend((value, depth + 1) for value, item in _before(
                    assignments.get(node.id, ()), node) if not item)
    return None


def _assignments(function: ast.AST) -> dict[str, list[tuple[ast.expr, bool]]]:
    """Each local name's assigned values (and whether it is an item of them: unpacked or
    iterated)."""
    found: dict[str, list[tuple[ast.expr, bool]]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append((node.value, False))
                elif isinstance(target, ast.Tuple | ast.List):
                    for element in target.elts:
                        if isinstance(element, ast.Name):
                            found.setdefault(element.id, []).append((node.value, True))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(
                node.target, ast.Name):
            found.setdefault(node.target.id, []).append((node.value, False))
        elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append((node.iter, True))
    return found


def _before(values: Any, use: ast.AST) -> list[tuple[ast.expr, bool]]:
    """The assignments written above ``use`` (a value read there cannot come from below,
    but in a loop, which these functions seldom need)."""
    return [(value, item) for value, item in values
            if value.lineno < use.lineno]  # type: ignore[attr-defined]


def _taken_as_container(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.expr | None:
    """The expression ``node`` takes as a container: ``e["key"]``, ``e.values()``,
    ``list(e)``, ``for _ in e``, ``a, b = e``, ``d.update(e)``, ``{**e}``."""
    parent = parents.get(node)
    if isinstance(parent, ast.Dict) and node in parent.values and None in parent.keys:
        return node  # ``{**e}`` (its key is None)
    if isinstance(parent, ast.Assign) and parent.value is node and any(
            isinstance(t, ast.Tuple | ast.List) for t in parent.targets):
        return node
    if isinstance(parent, ast.For) and parent.iter is node:
        return node
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
            node.slice.value, str):
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _CONTAINER_METHODS and not node.args):
        return node.func.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in _FILLING_METHODS and len(node.args) == 1):
        return node.args[0]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _ITERATING_CALLS and len(node.args) == 1):
        return node.args[0]
    if isinstance(node, ast.comprehension):
        return node.iter
    return None


def _stand_in_output(expression: ast.expr, assignments: dict[str, list[tuple[ast.expr, bool]]],
                     owners: list[Any]) -> tuple[str, StandIn] | None:
    """The stand-in whose call ``expression`` is, or a local variable was assigned from (its
    output, or an item of it: ``detections, losses = self.roi_heads(...)``)."""
    values: list[ast.expr] = [expression]
    if isinstance(expression, ast.Name):
        values += [value for value, _ in _before(assignments.get(expression.id, ()),
                                                 expression)]
    for value in values:
        if isinstance(value, ast.Call):
            names = _chain(value.func)
            stand_in = _resolve(names, owners) if names is not None else None
            if names is not None and isinstance(stand_in, StandIn):
                return "self." + ".".join(names), stand_in
    return None
