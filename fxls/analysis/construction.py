"""Build an instance of every nn.Module class of a file, the way its project builds them.

For each class, in order: its ``init`` pragma; ``[tool.fxls] entry_points``; its
constructor's defaults (a configuration parameter gets a built, shrunk configuration);
module-level factory functions of the file that reach it (``resnet18()``, called with
their defaults and ``pretrained=False``/``weights=None``; one representative, the cheapest);
literal-argument constructions written in the file (``Block(dim=64)``); and instances
found inside the models built so far (``traced via ResNet (resnet18())``). A factory that
returns an instance of the class itself is preferred to inferred arguments however big its
model; arguments inferred from their use are the last resort, and an instance built with them
is traced once to check that the trace does not fail on one of the guesses (``guess_blame``:
a guessed int called, a stand-in without the method the forward calls...): the failed use
asks for another kind of value, and FX101 says which guess failed where when none works.

Models are built within a memory budget, their expensive weight initialisers skipped
(``shape_build``: tracing needs no parameter values; ``Built.weights`` builds the real ones
when the complete report needs them); one that exceeds the budget (or that a meta-device
census of factories found too big) is traced from a meta-device instance (no example-input
runs).
"""

from __future__ import annotations

import ast
import gc
import importlib
import inspect
import traceback
from collections import deque
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any

import torch

from fxcore.source import is_internal_file
from fxls.analysis import arguments, configs, packages
from fxls.analysis.guess_blame import Blame, trace_blame
from fxls.analysis.meta_build import is_out_of_memory, memory_budget, on_meta
from fxls.analysis.pragmas import ClassPragmas, FilePragmas
from fxls.analysis.real_weights import RealWeights
from fxls.analysis.shape_build import Budget, initialisers_skipped
from fxls.analysis.stand_ins import GuessedInt

#: how an instance built from inferred arguments says so (its entry)
INFERRED = "arguments inferred from their use"
#: models with more parameters are traced on the meta device, never built for real
MAX_REAL_PARAMETERS = 60_000_000
#: the memory a model may take while being built for real (then it is built on meta)
BUILD_BUDGET_MB = 1536
#: the defaults of a class bigger than this give way to a cheaper factory, when one exists
PREFER_FACTORY_ABOVE = 15_000_000
#: how many factories of one class are sized on the meta device to pick the cheapest
_FACTORY_CANDIDATES = 3
#: at most this many factories are built for real to reach one class
_FACTORY_CALLS = 2
#: at most this many factories of one file are built on the meta device to learn their sizes,
#: at most this many more for one class, and for at most this long in all
_MAX_CENSUS = 24
_CENSUS_PER_CLASS = 6
_CENSUS_SECONDS = 2.0
#: at most this many instances built with inferred arguments (and for this long) are traced
#: to check that the trace does not fail on a guess (each is a trace of the class)
_GUESS_TRACES, _GUESS_SECONDS = 6, 10.0
#: factories never called: entry points of scripts, not builders of models
_NOT_FACTORIES = ("main", "train", "test", "run", "demo", "bench", "evaluate", "cli")


@dataclass
class Built:
    instance: torch.nn.Module
    #: how it was built, as the status shows it (None: the constructor's own defaults)
    entry: str | None = None
    #: the root class it was found inside, when it was not built on its own
    via: str | None = None
    #: too big to build for real: a meta-device instance (traced, never run)
    on_meta: bool = False
    parameters: int | None = None
    #: built without its initialisers: the real weights, built when first needed (None:
    #: the instance has its real weights, or is on the meta device)
    weights: RealWeights | None = None


@dataclass
class NotBuilt:
    """Why a class has no instance: the reason for the status, and the FX101/FX004/FX102
    data."""

    code: str  # FX101 (unknown arguments) | FX004 (it raised) | FX102 (out of memory)
    message: str
    reason: str
    #: the constructor's required parameters that nothing supplied (for the init-stub fix)
    missing: list[str] = field(default_factory=list)
    #: where a construction raised (a span of the user's code), when it did
    error: BaseException | None = None


Outcome = Built | NotBuilt


@dataclass
class FileScope:
    """What construction needs of the analysed file."""

    module_name: str
    namespace: dict[str, Any]
    tree: ast.Module | None
    source: str
    pragmas: FilePragmas
    entry_points: list[str]


def build_all(classes: list[type], scope: FileScope) -> tuple[dict[type, Outcome], list[str]]:
    """An instance, or the reason there is none, for each class; and the problems with the
    configured entry points that concern this file."""
    builder = _Builder(classes, scope)
    return builder.run(), builder.problems


class _Builder:
    def __init__(self, classes: list[type], scope: FileScope) -> None:
        self.classes = classes
        self.scope = scope
        self.by_name = {cls.__name__: cls for cls in classes}
        self.outcomes: dict[type, Outcome] = {}
        self.roots: list[tuple[type, Built]] = []  # models built whole: harvested last
        self.tried: dict[type, list[str]] = {cls: [] for cls in classes}
        self.problems: list[str] = []
        #: why the inferred arguments did not build a class: the first failure
        self.inference_failed: dict[type, tuple[str, NotBuilt]] = {}
        self._making: set[type] = set()  # classes being built as another's argument
        #: the analysed file's text (maybe unsaved), by its file name: what a trace ran
        self._edited = {str(scope.namespace.get("__file__", "")): scope.source}

    # -- the order of strategies ---------------------------------------------------------

    def run(self) -> dict[type, Outcome]:
        pending = []
        for cls in self.classes:
            pragmas = self.scope.pragmas.classes.get(cls.__name__, ClassPragmas())
            if pragmas.skip or pragmas.leaf:
                continue  # nothing to trace: no instance needed
            if pragmas.init:
                self._settle(cls, self._from_pragma(cls, pragmas))
            else:
                pending.append(cls)
        self._from_entry_points()
        big_defaults: dict[type, Outcome] = {}
        for cls in pending:
            if cls in self.outcomes:
                continue
            outcome = self._from_defaults(cls)
            if isinstance(outcome, Built) and (outcome.parameters or 0) > PREFER_FACTORY_ABOVE:
                big_defaults[cls] = outcome  # a factory may build it smaller
            elif isinstance(outcome, Built) or outcome.code != "FX101":
                self._settle(cls, outcome)
            else:
                self.outcomes.setdefault(cls, outcome)
        self._from_factories([c for c in pending if not self._has_instance(c)])
        for cls, outcome in big_defaults.items():
            if not self._has_instance(cls):
                self._settle(cls, outcome)
        self._from_literal_calls([c for c in pending if not self._has_instance(c)])
        self._harvest()
        self._from_size_names([c for c in pending if not self._has_instance(c)])
        for cls in pending:
            outcome = self.outcomes.get(cls)
            if isinstance(outcome, NotBuilt) and outcome.code == "FX101":
                outcome.message, outcome.reason = self._not_built_message(cls, outcome)
        return self.outcomes

    def _has_instance(self, cls: type) -> bool:
        return isinstance(self.outcomes.get(cls), Built)

    def _settle(self, cls: type, outcome: Outcome) -> None:
        if isinstance(outcome, Built):
            if not self._has_instance(cls):  # the first (cheapest) instance stays
                self.outcomes[cls] = outcome
            self.roots.append((cls, outcome))
        elif not self._has_instance(cls):
            self.outcomes[cls] = outcome

    # -- strategies ----------------------------------------------------------------------

    def _from_pragma(self, cls: type, pragmas: ClassPragmas) -> Outcome:
        try:
            kwargs = eval(f"dict({pragmas.init})", {**self.scope.namespace, "torch": torch})
        except Exception as error:
            message = f"the `init` pragma of `{cls.__name__}` cannot be evaluated: {error}"
            return NotBuilt("FX101", message, message)
        return self._build(cls, lambda: cls(**kwargs), "init pragma", required=kwargs)

    def _from_defaults(self, cls: type) -> Outcome:
        kwargs, built_from = configs.arguments_for(cls, self.scope.namespace)
        kwargs.update(_switched_off(cls))
        self.tried[cls].append("its constructor's defaults")
        return self._build(cls, lambda: cls(**kwargs), built_from or None, required=kwargs)

    def _from_entry_points(self) -> None:
        for text in self.scope.entry_points:
            target, _, call = text.partition("(")
            module_name, _, attr = target.strip().partition(":")
            mine = self.scope.module_name == module_name or self.scope.module_name.startswith(
                f"{module_name}.")
            try:
                function = getattr(importlib.import_module(module_name), attr)
                kwargs = eval(f"dict({call[:-1]})", {"torch": torch}) if call else {}
            except Exception as error:
                if mine:
                    self.problems.append(f"the entry point `{text}` cannot be used: "
                                         f"{type(error).__name__}: {_first_line(error)}")
                continue
            model, weights = self._call_built(function, kwargs)
            if isinstance(model, BaseException) and mine:
                self.problems.append(f"the entry point `{text}` raised "
                                     f"{type(model).__name__}: {_first_line(model)}")
            if isinstance(model, torch.nn.Module) and type(model) in self.tried:
                self._settle(type(model), Built(model, text.strip(), on_meta=on_meta_device(model),
                                                parameters=parameter_count(model), weights=weights))
            elif isinstance(model, torch.nn.Module):
                self.roots.append((type(model), Built(
                    model, text.strip(), on_meta=on_meta_device(model), weights=weights)))

    def _from_factories(self, wanted: list[type]) -> None:
        """For each class still without an instance, the cheapest factory whose model
        contains it: factories that reach the class are built on the meta device (cheapest
        literals first) until one contains it, then the smallest of those is built."""
        if not wanted or self.scope.tree is None:
            return
        factories = _factories(self.scope, self.by_name)
        in_package: list[_Factory] | None = None  # read when a class needs them
        #: call -> (the classes in the model, its size, the model's own class)
        census: dict[str, tuple[set[type], int, type] | None] = {}
        deadline = perf_counter() + _CENSUS_SECONDS
        #: blocks only big models contain: after the classes factories build themselves,
        #: whose models may hold them, small guessed sizes before building a big model
        blocks: list[tuple[type, list[_Factory]]] = []
        for cls in wanted:
            if self._has_instance(cls) or self._in_a_root(cls):
                continue  # a factory built for an earlier class built this one too
            reaching = sorted((f for f in factories if cls.__name__ in f.reaches),
                              key=lambda f: f.size_hint)
            if not reaching:  # the factories of the file's package (``fcos_resnet50_fpn``)
                if in_package is None:
                    in_package = _package_factories(self.scope, self.by_name, wanted)
                reaching = sorted((f for f in in_package if cls.__name__ in f.reaches),
                                  key=lambda f: f.size_hint)
            if not reaching:
                continue
            self.tried[cls].append(f"{len(reaching)} factory function(s)")
            containing: list[tuple[int, _Factory]] = []
            builds_it = False  # a factory returns an instance of the class itself
            unknown: list[_Factory] = []
            new_for_class = 0
            for factory in reaching:
                if factory.call_text not in census:
                    if (len(census) >= _MAX_CENSUS or new_for_class >= _CENSUS_PER_CLASS
                            or perf_counter() > deadline):
                        break
                    new_for_class += 1
                    census[factory.call_text] = self._meta_census(factory)
                seen = census[factory.call_text]
                if seen is None:
                    unknown.append(factory)
                elif cls in seen[0]:
                    containing.append((seen[1], factory))
                    builds_it = builds_it or seen[2] is cls
                    if len(containing) >= _FACTORY_CANDIDATES:
                        break
            containing.sort(key=lambda item: item[0])
            choices = [f for _, f in containing] + unknown
            if containing and not builds_it and containing[0][0] > PREFER_FACTORY_ABOVE:
                blocks.append((cls, choices))
            else:
                self._build_factory_model(cls, choices, census)
        for cls, choices in blocks:
            if not (self._has_instance(cls) or self._in_a_root(cls) or self._guess_sizes(cls)):
                self._build_factory_model(cls, choices, census)

    def _build_factory_model(self, cls: type, choices: list[_Factory],
                             census: dict[str, tuple[set[type], int, type] | None]) -> None:
        """The first of ``choices`` that builds (at most ``_FACTORY_CALLS`` tried), as the
        instance of its model's class or a root to harvest ``cls`` from."""
        for factory in choices[:_FACTORY_CALLS]:
            known = census.get(factory.call_text)
            model, weights = self._call_built(factory.function, factory.defaults,
                                              known[1] if known else None)
            if isinstance(model, BaseException):
                self.tried[cls].append(f"`{factory.call_text}`, which raised "
                                       f"{type(model).__name__}: {_first_line(model)}")
                continue
            if not isinstance(model, torch.nn.Module):
                continue
            built = Built(model, factory.call_text, on_meta=on_meta_device(model),
                          parameters=parameter_count(model), weights=weights)
            if type(model) in self.tried:
                self._settle(type(model), built)
            else:
                self.roots.append((type(model), built))
            if _contains_instance_of(model, cls):
                break

    def _meta_census(self, factory: _Factory) -> tuple[set[type], int, type] | None:
        """The classes in the model a factory builds, its size and its class, from a
        meta-device build (None when the factory cannot build on the meta device)."""
        try:
            model = on_meta(lambda: factory.function(**factory.defaults))
        except Exception:
            return None
        if not isinstance(model, torch.nn.Module):
            return None
        return {type(m) for m in model.modules()}, parameter_count(model), type(model)

    def _in_a_root(self, cls: type) -> bool:
        return any(_contains_instance_of(root.instance, cls) for _, root in self.roots)

    def _from_literal_calls(self, wanted: list[type]) -> None:
        if not wanted or self.scope.tree is None:
            return
        names = {cls.__name__ for cls in wanted}
        for node in ast.walk(self.scope.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in names):
                continue
            cls = self.by_name[node.func.id]
            if self._has_instance(cls):
                continue
            try:
                args = [ast.literal_eval(a) for a in node.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if any(k.arg is None for k in node.keywords):
                continue
            text = ast.get_source_segment(self.scope.source, node) or f"{cls.__name__}(...)"
            if "literal constructions" not in self.tried[cls]:
                self.tried[cls].append("literal constructions")
            outcome = self._build(cls, lambda c=cls, a=args, k=kwargs: c(*a, **k),
                                  f"{text} (line {node.lineno})")
            if isinstance(outcome, Built):
                self._settle(cls, outcome)

    def _from_size_names(self, wanted: list[type]) -> None:
        """Classes whose required parameters nothing supplied, built with arguments inferred
        from how their constructors use them: the last resort."""
        for cls in wanted:
            self._guess_sizes(cls)

    def _guess_sizes(self, cls: type) -> bool:
        """Build ``cls`` with inferred arguments (once); True when that gave an instance."""
        if self._has_instance(cls):
            return True
        tried = "arguments inferred from their use in the constructor"
        if tried in self.tried[cls]:
            return False
        self.tried[cls].append(tried)
        found = self._inferred(cls)
        if isinstance(found, Built):
            self._settle(cls, found)
            return True
        if found is not None:
            self.inference_failed[cls] = found
        return False

    def _inferred(self, cls: type) -> Built | tuple[str, NotBuilt] | None:
        """An instance built with inferred arguments; else the first failure (the arguments
        shown, why), None when there was nothing to infer."""
        parameters = arguments.infer(cls, self.scope.namespace, self.scope.tree)
        if not parameters or cls in self._making:
            return None
        first: tuple[str, NotBuilt] | None = None
        self._making.add(cls)
        # then with the None defaults it uses as sizes too ("depth, heads must be supplied")
        more = arguments.infer(cls, self.scope.namespace, self.scope.tree, optional=True)
        plans = deque([parameters] + ([more] if len(more) > len(parameters) else []))
        failed = _FailedGuesses()
        try:
            while plans and not failed.exhausted():
                plan = plans.popleft()
                for assignment in arguments.attempts(plan):
                    if failed.covers(assignment):
                        continue
                    try:
                        kwargs = {k: arguments.realise(v, self._fresh) for k, v in
                                  assignment.items()}
                    except Exception:
                        continue
                    kwargs.update(_switched_off(cls))
                    shown = ", ".join(f"{k}={v!r}" for k, v in assignment.items())
                    outcome = self._build(cls, lambda k=kwargs: cls(**k),
                                          f"{cls.__name__}({shown}), {INFERRED}",
                                          required=kwargs)
                    if isinstance(outcome, Built):
                        blamed = trace_blame(outcome.instance, self._edited)
                        if blamed is None:
                            return outcome
                        name = failed.add(blamed, assignment, kwargs)
                        if first is None or first[1].error is not None:
                            first = (shown, _guess_failed(cls, blamed))  # says more than a raise
                        # next: the values that got this far, a change where it failed
                        following = arguments.pinned(plan, assignment, name, blamed.misuse)
                        if following is not None:
                            plans.extendleft([plan, following])
                        if following is not None or failed.exhausted():
                            break
                    elif first is None:
                        first = (shown, outcome)
        finally:
            self._making.discard(cls)
        return first

    def _fresh(self, cls: type) -> torch.nn.Module:
        """A new instance of another class of the file, to pass as an argument."""
        kwargs, _ = configs.arguments_for(cls, self.scope.namespace)
        try:
            return cls(**kwargs)
        except Exception:
            found = self._inferred(cls) if cls in self.tried else None
            if isinstance(found, Built):
                if found.weights is not None:  # an argument is part of the real model too
                    found.weights.realise()
                return found.instance
            raise

    def _harvest(self) -> None:
        """Classes only reachable inside built models: their first instance there."""
        for root_cls, root in list(self.roots):
            for submodule in root.instance.modules():
                cls = type(submodule)
                if submodule is root.instance or cls not in self.tried or self._has_instance(cls):
                    continue
                pragmas = self.scope.pragmas.classes.get(cls.__name__, ClassPragmas())
                if pragmas.skip or pragmas.leaf:
                    continue
                self.outcomes[cls] = Built(submodule, root.entry, root_cls.__name__,
                                           root.on_meta, parameter_count(submodule), root.weights)

    # -- building ------------------------------------------------------------------------

    def _build(
        self, cls: type, make: Callable[[], Any], entry: str | None,
        required: dict[str, Any] | None = None,
    ) -> Outcome:
        """``make()`` for real within a memory budget, else on the meta device."""
        try:
            instance, too_big, weights = _sized_build(make)
        except TypeError as error:
            if _raised_by_the_call(error):
                missing = _required_parameters(cls, required or {})
                message = f"`{cls.__name__}` cannot be constructed with known arguments ({error})"
                return NotBuilt("FX101", message, message, missing)
            return _raised(cls, error)
        except (Exception, SystemExit) as error:  # sys.exit() in __init__: one FX004 there
            return _raised(cls, error)
        if not isinstance(instance, torch.nn.Module):
            message = f"building `{cls.__name__}` gave a {type(instance).__name__}"
            return NotBuilt("FX101", message, message)
        if too_big:
            entry = f"{entry}, on the meta device" if entry else "on the meta device"
        return Built(instance, entry, on_meta=too_big, parameters=parameter_count(instance),
                     weights=weights)

    def _call_built(
        self, function: Callable[..., Any], kwargs: dict[str, Any], parameters: int | None = None
    ) -> tuple[Any, RealWeights | None]:
        """Call a factory (its size known from a census, or not); the exception it raised."""
        try:
            model, _, weights = _sized_build(lambda: function(**kwargs), parameters)
        except (Exception, SystemExit) as error:
            return error, None
        return model, weights

    def _not_built_message(self, cls: type, outcome: NotBuilt) -> tuple[str, str]:
        missing = outcome.missing or _required_parameters(cls, {})
        needs = ", ".join(f"`{p}`" for p in missing)
        tried = ", ".join(self.tried.get(cls) or ["its constructor's defaults"])
        hint = ", ".join(f"{p}=..." for p in missing) or "..."
        reason = f"its constructor needs {needs}" if missing else outcome.reason
        if cls in self.inference_failed:
            reason = _inference_reason(cls, *self.inference_failed[cls])
        message = (f"`{cls.__name__}` cannot be constructed with known arguments: "
                   f"{reason} (tried {tried}, and instances inside the models built from this "
                   f"file); add `# fxls: init {hint}` above the class or an entry point in "
                   "[tool.fxls]")
        return message, reason


# -- factories ---------------------------------------------------------------------------


@dataclass
class _Factory:
    function: Callable[..., Any]
    defaults: dict[str, Any]  # what is passed: pretrained=False / weights=None
    call_text: str  # "resnet18()"
    reaches: set[str]  # names of the file's classes its code (and its helpers') mentions
    size_hint: int  # sum of the integer literals in its body: a rough size order


def _factories(scope: FileScope, classes: dict[str, type]) -> list[_Factory]:
    """Module-level functions of the file that need no arguments and reach its classes:
    through the names their code, the helpers they call and the classes they name mention
    (``resnet18`` -> ``_resnet`` -> ``ResNet`` -> its default ``block`` class)."""
    assert scope.tree is not None
    functions = {n.name: n for n in scope.tree.body
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    mentions: dict[str, set[str]] = {}
    for node in scope.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            mentions[node.name] = _names_in(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):  # a table of configs or block types
                    mentions.setdefault(target.id, set()).update(_names_in(node.value))
    found = []
    for name, node in functions.items():
        if name.startswith("_") or name.lower().startswith(_NOT_FACTORIES):
            continue
        function = scope.namespace.get(name)
        if not callable(function) or isinstance(node, ast.AsyncFunctionDef):
            continue
        if getattr(function, "__module__", None) != scope.module_name:
            continue
        defaults = _factory_arguments(function)
        if defaults is None:
            continue
        reaches = _reachable_classes(name, mentions, classes)
        if not reaches or not _returns_value(node):
            continue
        shown = ", ".join(f"{k}={v!r}" for k, v in defaults.items())
        found.append(_Factory(function, defaults, f"{name}({shown})", reaches, _size_hint(node)))
    return found


def _package_factories(scope: FileScope, classes: dict[str, type], wanted: list[type]
                       ) -> list[_Factory]:
    """The factories of the other modules of the file's package already imported, that
    reach one of the ``wanted`` classes (only modules whose text names one are parsed)."""
    names = {cls.__name__ for cls in wanted}
    found: list[_Factory] = []
    for module in packages.loaded_siblings(scope.module_name):
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            continue
        if not any(name in source for name in names):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        sibling = FileScope(module.__name__, vars(module), tree, source, scope.pragmas, [])
        shown_as = module.__name__.rpartition(".")[2] + "."
        found += [replace(f, call_text=shown_as + f.call_text)
                  for f in _factories(sibling, classes)]
    return found


def _factory_arguments(function: Callable[..., Any]) -> dict[str, Any] | None:
    """What to call a factory with (None: it has required arguments)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    passed: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if arguments.is_off_switch(parameter.name):
            passed[parameter.name] = arguments.off_value(parameter.name)
        elif parameter.default is inspect.Parameter.empty:
            return None
    return passed


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _reachable_classes(
    start: str, mentions: dict[str, set[str]], classes: dict[str, type]
) -> set[str]:
    seen, todo, reached = {start}, [start], set()
    while todo:
        for name in mentions.get(todo.pop(), ()):
            if name in classes:
                reached.add(name)
            if name in mentions and name not in seen:
                seen.add(name)
                todo.append(name)
    return reached


def _returns_value(node: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node))


def _size_hint(node: ast.FunctionDef) -> int:
    return sum(
        n.value for n in ast.walk(node)
        if isinstance(n, ast.Constant) and type(n.value) is int and n.value > 0
    )


# -- helpers -----------------------------------------------------------------------------

def _switched_off(cls: type) -> dict[str, Any]:
    """``weights*=None``, ``pretrained*=False`` for the constructor's parameters of those
    names whose default would load weights (the sandbox refuses downloads)."""
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return {}
    return {p.name: arguments.off_value(p.name) for p in parameters
            if arguments.is_off_switch(p.name) and p.default is not inspect.Parameter.empty
            and p.default is not None and p.default is not False
            and p.kind is not p.VAR_KEYWORD}


class _FailedGuesses:
    """The guesses a trace failed on, never tried again: a candidate of a parameter, or
    every int for a parameter whose guessed int was called, measured or iterated."""

    def __init__(self) -> None:
        self.traces = 0
        self.started = perf_counter()
        self.candidates: list[tuple[str, Any]] = []
        self.no_ints: set[str] = set()

    def exhausted(self) -> bool:
        return self.traces >= _GUESS_TRACES or perf_counter() - self.started > _GUESS_SECONDS

    def add(self, blamed: Blame, assignment: dict[str, Any], kwargs: dict[str, Any]) -> str:
        """Note the parameter whose value ``blamed`` names (the first one when the value is
        none of them: a size inside a stand-in); its name."""
        self.traces += 1
        name = next((k for k, v in kwargs.items() if v is blamed.value), None)
        if name is None:
            name = blamed.attribute.removeprefix("self.").split(".")[0]
        if name not in assignment:
            name = next(iter(assignment), "")
        if isinstance(blamed.value, GuessedInt):
            self.no_ints.add(name)
        self.candidates.append((name, assignment.get(name)))
        return name

    def covers(self, assignment: dict[str, Any]) -> bool:
        if any(type(assignment.get(name)) is int for name in self.no_ints):
            return True
        return any((name in assignment and assignment[name] is value) or (
            type(assignment.get(name)) is type(value) and assignment.get(name) == value)
            for name, value in self.candidates)


def _guess_failed(cls: type, blamed: Blame) -> NotBuilt:
    """The FX101 of a class whose every guess made its trace fail."""
    reason = f"its trace fails on fxls's guess, not on the code: {blamed.describe()}"
    message = f"`{cls.__name__}` cannot be constructed with known arguments: {reason}"
    return NotBuilt("FX101", message, reason)


def _inference_reason(cls: type, shown: str, failure: NotBuilt) -> str:
    """Why inferred arguments did not build ``cls``: the check that failed, with its line."""
    error = failure.error
    if error is None:
        return f"with arguments inferred from their use ({shown}): {failure.reason}"
    where = ""
    # the innermost frame of model code (not torch's layer that rejected a value)
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename != __file__ and not is_internal_file(f.filename)]
    if frames:
        frame = frames[-1]
        where = f" at {Path(frame.filename).name}:{frame.lineno}"
        if frame.line:
            where += f" (`{frame.line.strip()}`)"
    return (f"with arguments inferred from their use ({shown}) its constructor raised "
            f"{type(error).__name__}: {_first_line(error)}{where}")


def parameter_count(model: torch.nn.Module) -> int:
    """Parameters and buffers: what building the model for real allocates (at least)."""
    return sum(t.numel() for t in (*model.parameters(), *model.buffers()))


def _sized_build(
    make: Callable[[], Any], parameters: int | None = None
) -> tuple[Any, bool, RealWeights | None]:
    """``(make(), False, weights)`` built with its initialisers skipped (``weights`` builds the
    real ones), or ``(instance on the meta device, True, None)`` when it is known to be too
    big or runs out of a memory budget while being built (models of billions of parameters
    fail at their first big allocation, not after minutes of initialising). Sizing every
    model on the meta device first would cost more: meta arithmetic imports torch's compiler
    stack (seconds) in each job. When the build without initialisers raises, the model is
    built for real (``weights`` None): that build raises what is wrong, as it always did."""
    if parameters is not None and parameters > MAX_REAL_PARAMETERS:
        torch.manual_seed(0)
        return on_meta(make), True, None
    for skipping in (True, False):
        torch.manual_seed(0)  # the same parameters in every run, so outputs can be compared
        skipped = 0
        try:
            skips = initialisers_skipped(Budget()) if skipping else nullcontext(lambda: 0)
            with memory_budget(BUILD_BUDGET_MB), skips as count:
                try:
                    instance = make()
                finally:
                    skipped = count()
        except Exception as error:
            if is_out_of_memory(error):
                break
            if skipped:
                continue
            raise  # nothing was skipped: the real build would raise the same
        if skipped and isinstance(instance, torch.nn.Module) and not on_meta_device(instance):
            return instance, False, RealWeights(partial(_real_build, make), instance)
        return instance, False, None  # nothing skipped: a real build
    gc.collect()
    torch.manual_seed(0)
    return on_meta(make), True, None


def _real_build(make: Callable[[], Any]) -> Any:
    """``make()`` for real, as ``_sized_build`` first built it (seed, memory budget)."""
    torch.manual_seed(0)
    with memory_budget(BUILD_BUDGET_MB):
        return make()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else ""


def on_meta_device(model: torch.nn.Module) -> bool:
    """Built on the meta device (too big to build for real): shapes without values."""
    return any(t.is_meta for t in (*model.parameters(), *model.buffers()))


def _contains_instance_of(model: torch.nn.Module, cls: type) -> bool:
    return any(type(m) is cls for m in model.modules())


def _raised_by_the_call(error: TypeError) -> bool:
    """A TypeError of the call itself (the arguments do not fit ``__init__``), not one raised
    inside the constructor: the innermost frame is ours (the call), not the class's code."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename == __file__



def construction_failed(cls: type, error: BaseException) -> NotBuilt:
    """The report of a construction of ``cls`` that raised ``error``."""
    return _raised(cls, error)


def _raised(cls: type, error: BaseException) -> NotBuilt:
    if is_out_of_memory(error):
        message = (f"constructing `{cls.__name__}` ran out of memory ({type(error).__name__}: "
                   f"{_first_line(error)}): raise `memory_limit_mb` in [tool.fxls], or give "
                   "smaller sizes with `# fxls: init`")
        return NotBuilt("FX102", message, "it ran out of memory while being built",
                        error=error)
    message = f"constructing `{cls.__name__}` raised {type(error).__name__}: {error}"
    return NotBuilt("FX004", message, f"its constructor raised {type(error).__name__}",
                    error=error)


def _required_parameters(cls: type, given: dict[str, Any]) -> list[str]:
    """``__init__``'s required parameters that ``given`` does not supply."""
    try:
        signature = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    parameters = list(signature.parameters.values())[1:]  # not `self`
    return [
        p.name for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in given
    ]

