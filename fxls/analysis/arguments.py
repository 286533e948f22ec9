"""Arguments for a constructor nothing in the file builds, inferred from how it uses them.

A parameter's name says little (``mlp_dim``, ``sm_dim``, ``fmap_size``, ``lora_rank``); its
use in ``__init__`` (and ``forward``) says what it is:

- passed to a layer or used in arithmetic (``nn.Linear(dim, mlp_dim)``, ``dim // heads``): a
  size -> small widths (larger ones too: an image size its patches must divide);
- ``range(depth)``, ``[...] * n``: a count -> 1 or 2;
- ``if flag:``: a flag -> False, True; compared with strings (``mode == "avg"``): those strings;
- called (``block(dim)``, ``norm_layer(dim)``) or stored and called in ``forward``
  (``self.fn = fn`` ... ``self.fn(x)``): a module or a callable -> the class the file itself
  passes there elsewhere (``PreNorm(dim, FeedForward(dim))``), else an identity (any
  arguments, returns its input);
- its attributes read (``backbone.out_channels``, ``layers.conv_norm_act(...)``): an object
  -> an identity module carrying them (sizes; identity classes for those it calls);
- indexed, unpacked or given to ``len()``: a sequence -> as many widths as ``len(p) == n``
  or the largest index says;
- ``f(**p)``: keyword arguments for ``f`` -> ``f``'s own inferred arguments.

Inherited ``__init__`` and ``forward`` count as the class's own (``member_use`` reads every
class of the MRO), and an annotation says what a parameter is before its use does
(``backbone: nn.Module``, ``Callable``, ``Sequence[...]``, ``Optional[...]``). A module
argument gets more than one stand-in to try (``stand_ins``): an identity, then one with the
methods the class calls on it and the output its caller unpacks, or a list of identities
where it is indexed or measured; ints are ``GuessedInt``, so a trace that fails on one of
these values is known to have failed on the guess (``guess_blame``).

``**kwargs`` handed on to a base class bring the base's required parameters in. Each
parameter gets a short list of candidate values (a name known as a size keeps its usual
value first: heads 4, kernels 3); ``attempts`` tries the first of each, then changes one
parameter at a time while the constructor's own checks fail (``assert lora_rank < dim``).
Parameters defaulting to None that the constructor uses are tried as well when the
required ones alone do not pass (``depth=None`` and then "depth must be supplied").
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import textwrap
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from fxls.analysis import sizes
from fxls.analysis.member_use import MemberUse, class_trees, member_use, stored_as
from fxls.analysis.stand_ins import ShapedStandIn, StandIn, StandInList, guessed

_SIZES = (32, 64, 16, 8, 128, 4, 96, 224)
_COUNTS = (1, 2)
#: weights and pretrained-ness are always off: nothing is downloaded
_OFF_PREFIXES = ("weights", "pretrained")
#: at most this many constructions per class
MAX_ATTEMPTS = 20


@dataclass
class Parameter:
    name: str
    #: what the constructor does with it: size, count, flag, choice, module, callable,
    #: sequence, unknown
    kind: str
    candidates: list[Any] = field(default_factory=list)


def is_off_switch(name: str) -> bool:
    """``weights``, ``weights_backbone``, ``pretrained``, ``pretrained_backbone``..."""
    return name.lower().startswith(_OFF_PREFIXES)


def off_value(name: str) -> Any:
    return False if name.lower().startswith("pretrained") else None


def required_parameters(cls: type, optional: bool = False
                        ) -> list[tuple[str, Callable[..., Any]]]:
    """``__init__``'s required parameters, with the ``__init__`` that declares each; a
    ``**kwargs`` handed on to the base class adds the base's required parameters.
    ``optional``: those defaulting to None too (``depth=None`` that a check then wants)."""
    found: list[tuple[str, Callable[..., Any]]] = []
    seen: set[str] = set()
    for init in _init_chain(cls):
        try:
            parameters = list(inspect.signature(init).parameters.values())[1:]
        except (TypeError, ValueError):
            break
        var_keyword = False
        for p in parameters:
            if p.kind is p.VAR_KEYWORD:
                var_keyword = True
            elif ((p.default is inspect.Parameter.empty or (
                    optional and p.default is None and not is_off_switch(p.name)))
                    and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                    and p.name not in seen):
                found.append((p.name, init))
            seen.add(p.name)
        if not var_keyword or not _hands_kwargs_to_super(init):
            break
    return found


def _init_chain(cls: type) -> Iterator[Callable[..., Any]]:
    """The ``__init__`` of ``cls`` and of the bases it calls, up to torch's own."""
    done: set[int] = set()
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is None or id(init) in done:
            continue
        if klass.__module__.startswith("torch.") or klass is object:
            return
        done.add(id(init))
        yield init


def _hands_kwargs_to_super(init: Callable[..., Any]) -> bool:
    tree = _function_tree(init)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "__init__"
                and any(k.arg is None for k in node.keywords)):
            return True
    return False


def _function_tree(function: Callable[..., Any]) -> ast.FunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        node = ast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError, ValueError):
        return None
    return node if isinstance(node, ast.FunctionDef) else None


def infer(cls: type, namespace: dict[str, Any], file_tree: ast.Module | None,
          depth: int = 0, optional: bool = False) -> list[Parameter]:
    """Each required parameter of ``cls`` with what it is and values to try; ``optional``:
    also the parameters defaulting to None that the constructor uses as sizes, counts,
    sequences, keyword arguments or objects."""
    wanted = required_parameters(cls, optional)
    if not wanted:
        return []
    required = {name for name, _ in required_parameters(cls)}
    class_node = _class_node(cls, file_tree)
    trees: dict[int, ast.FunctionDef | None] = {}
    classes: list[ast.ClassDef] | None = None
    result = []
    for name, init in wanted:
        if id(init) not in trees:
            own = class_node is not None and vars(cls).get("__init__") is init
            trees[id(init)] = (_method(class_node, "__init__") if own else None) or \
                _function_tree(init)
        tree = trees[id(init)]
        if classes is None:
            classes = _class_trees(cls, class_node)
        use = member_use(classes, stored_as(tree, name)) if tree is not None else MemberUse()
        kind, choices = _kind(name, tree, use.called)
        annotated = _annotated_kind(_annotation(init, name))
        kind = _with_annotation(kind, annotated)
        if use.measured and kind in ("unknown", "size", "count"):
            kind = "sequence"  # only ``forward`` says: ``len(self.layers)``
        passed = _passed_elsewhere(cls.__name__, name, _position(init, name), file_tree,
                                   namespace)
        if name not in required and kind not in ("size", "count", "sequence", "mapping",
                                                  "config"):
            continue  # an optional parameter that may well stay None
        if kind == "mapping":
            candidates = _mappings(choices, namespace, file_tree, depth)
        else:
            candidates = _candidates(name, kind, choices, passed)
        if kind in ("module", "config"):
            candidates = _module_stand_ins(candidates, choices, use, annotated == "modules")
        elif kind == "sequence" and use.measured:
            candidates = [*candidates, _StandInList(2)]  # a list of modules, maybe
        result.append(Parameter(name, kind, candidates))
    return result


def _class_trees(cls: type, class_node: ast.ClassDef | None) -> list[ast.ClassDef]:
    """The class definitions of the MRO; the class itself as the analysed text has it."""
    inherited = list(class_trees(cls))
    if class_node is None:
        return inherited
    return [class_node, *(c for c in inherited if c.name != cls.__name__)]


def _annotation(init: Callable[..., Any], name: str) -> Any:
    try:
        return typing.get_type_hints(init).get(name)
    except Exception:  # a name the annotation uses that is not importable at run time
        return None


def _annotated_kind(annotation: Any) -> str | None:
    """What an annotation says a parameter is: ``module``, ``modules`` (a module list),
    ``callable``, ``sequence``, ``flag``, ``size``; None when it says nothing we use."""
    if annotation is None:
        return None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):  # Optional[X]: what X is
        rest = [a for a in args if a is not type(None)]
        return _annotated_kind(rest[0]) if len(rest) == 1 else None
    if isinstance(annotation, type) and not origin:
        if issubclass(annotation, torch.nn.ModuleList):
            return "modules"
        if issubclass(annotation, torch.nn.Module):
            return "module"
        if annotation is bool:
            return "flag"
        if annotation in (int, float):
            return "size"
        return None
    if annotation is collections.abc.Callable or origin in (collections.abc.Callable, type):
        return "callable"
    if origin in (list, tuple, collections.abc.Sequence, collections.abc.Iterable):
        element = _annotated_kind(args[0]) if args else None
        return "modules" if element in ("module", "modules") else "sequence"
    return None


def _with_annotation(kind: str, annotated: str | None) -> str:
    """The kind an annotation declares wins over the one guessed from use, except where the
    use says more of the same thing (an ``int`` used in ``range()`` is a count)."""
    if annotated in ("module", "modules"):
        return "config" if kind == "config" else "module"
    if annotated == "callable" and kind == "module":
        return kind  # called in ``forward``: a module is a callable, and returns a tensor
    if annotated in ("callable", "sequence"):
        return annotated
    if annotated == "flag" and kind in ("unknown", "size"):
        return "flag"
    if annotated == "size" and kind in ("unknown", "callable", "module", "sequence"):
        return "size"
    return kind


def _module_stand_ins(candidates: list[Any], choices: list[Any], use: MemberUse,
                      a_list: bool) -> list[Any]:
    """A module argument's stand-ins: after the identity, one with the methods the class
    calls on it and the output its caller unpacks, and a list of identities where the class
    indexes or measures it (first when annotated as a module list)."""
    read = tuple(sorted({c.name for c in choices if isinstance(c, _Attribute)}))
    called = tuple(sorted({c.name for c in choices if isinstance(c, _Attribute) and c.called}))
    if not candidates:
        candidates = [_WithAttributes(read, called)]
    more: list[Any] = []
    if use.methods or use.output_shaped:
        more.append(_Shaped(read, called, tuple(sorted(use.methods)), use.unpacked,
                            tuple(use.keys), use.items, use.listed))
    if a_list or (use.measured and not use.called):  # a list of modules is not called
        more.insert(0 if a_list else len(more), _StandInList(2))
    return [*more, *candidates] if a_list else [*candidates, *more]


def _mappings(choices: list[Any], namespace: dict[str, Any], file_tree: ast.Module | None,
              depth: int) -> list[Any]:
    """For ``f(**p)``: ``p`` with the first values inferred for ``f``'s own parameters (those
    the call does not pass), else empty."""
    found: list[Any] = []
    for choice in choices:
        callee = namespace.get(choice.callee) if isinstance(choice, _Mapping) else None
        if not isinstance(callee, type) or depth >= 2:
            continue
        inner = infer(callee, namespace, file_tree, depth + 1)
        if all(q.candidates for q in inner):
            found.append({q.name: q.candidates[0] for q in inner
                          if q.name not in choice.passed})
    return [*found, {}]


def _class_node(cls: type, tree: ast.Module | None) -> ast.ClassDef | None:
    if tree is None:
        return None
    return next((n for n in ast.walk(tree)
                 if isinstance(n, ast.ClassDef) and n.name == cls.__name__), None)


def _method(node: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    if node is None:
        return None
    return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name),
                None)


def _position(init: Callable[..., Any], name: str) -> int | None:
    try:
        names = list(inspect.signature(init).parameters)[1:]
    except (TypeError, ValueError):
        return None
    return names.index(name) if name in names else None


def _kind(name: str, tree: ast.FunctionDef | None, called_in_forward: bool) -> tuple[str, list]:
    """What ``name`` is in ``tree`` (``__init__``), by its uses; and literal choices."""
    if tree is None:
        return ("module" if called_in_forward else "unknown"), []
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    votes: dict[str, int] = {}
    choices: list[Any] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == name
                and isinstance(node.ctx, ast.Load)):
            continue
        kind = _use(node, parents.get(node), parents, choices)
        if kind:
            votes[kind] = votes.get(kind, 0) + 1
    if called_in_forward:
        return "module", choices
    # an object whose attributes are read is one (a config), whatever else it is passed to
    for kind in ("callable", "mapping", "config", "sequence", "count", "choice", "size",
                 "flag"):
        if votes.get(kind):
            return kind, choices
    return "unknown", choices


def _use(node: ast.Name, parent: ast.AST | None, parents: dict, choices: list) -> str | None:
    if isinstance(parent, ast.Call):
        if parent.func is node:
            return "callable"
        function = parent.func
        called = function.id if isinstance(function, ast.Name) else (
            function.attr if isinstance(function, ast.Attribute) else "")
        if called == "range":
            return "count"
        if called in ("len", "list", "tuple", "enumerate", "zip", "sum", "max", "min"):
            length = _compared_length(parent, parents.get(parent)) if called == "len" else None
            if length is not None:
                choices.append(_Length(length))
            return "sequence"
        if called in ("isinstance", "callable", "getattr", "hasattr"):
            return None
        return "size"
    if isinstance(parent, ast.keyword):
        if parent.arg is None:  # f(**p): keyword arguments for f
            call = parents.get(parent)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                choices.append(_Mapping(call.func.id, frozenset(
                    k.arg for k in call.keywords if k.arg)))
            return "mapping"
        return "size"
    if isinstance(parent, ast.BinOp):
        other = parent.right if parent.left is node else parent.left
        if isinstance(parent.op, ast.Mult) and isinstance(other, ast.List | ast.Tuple):
            return "count"
        return "size"
    if isinstance(parent, ast.Subscript) and parent.value is node:
        index = parent.slice
        if isinstance(index, ast.Constant) and type(index.value) is int and 0 <= index.value < 16:
            choices.append(_Length(index.value + 1, at_least=True))
        return "sequence"
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = parents.get(parent)
        called = isinstance(call, ast.Call) and call.func is parent
        choices.append(_Attribute(parent.attr, called))
        return "config"
    if isinstance(parent, ast.Compare):
        literals = [c.value for c in (parent.left, *parent.comparators)
                    if isinstance(c, ast.Constant)]
        for c in parent.comparators:
            if isinstance(c, ast.Tuple | ast.List | ast.Set):
                literals += [e.value for e in c.elts if isinstance(e, ast.Constant)]
        strings = [v for v in literals if isinstance(v, str)]
        if strings:
            choices.extend(s for s in strings if s not in choices)
            return "choice"
        if any(isinstance(v, int | float) and not isinstance(v, bool) for v in literals):
            return "size"
        return None
    if isinstance(parent, ast.If | ast.IfExp | ast.BoolOp | ast.While) or (
            isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)):
        return "flag"
    if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
        return "sequence"
    if isinstance(parent, ast.Assign) and parent.value is node and any(
            isinstance(t, ast.Tuple) for t in parent.targets):
        return "sequence"
    return None


def _passed_elsewhere(class_name: str, name: str, position: int | None,
                      tree: ast.Module | None, namespace: dict[str, Any]) -> list[Any]:
    """What the file passes for ``name`` where it builds the class: a class or function of
    the file (``PreNorm(dim, FeedForward(dim, mlp_dim))`` -> ``FeedForward``)."""
    if tree is None:
        return []
    found: list[Any] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == class_name):
            continue
        given = [k.value for k in node.keywords if k.arg == name]
        if position is not None and position < len(node.args):
            given.append(node.args[position])
        for value in given:
            target = value.func if isinstance(value, ast.Call) else value
            if isinstance(target, ast.Name) and isinstance(namespace.get(target.id), type):
                kind = "instance" if isinstance(value, ast.Call) else "class"
                entry = (kind, namespace[target.id])
                if entry not in found:
                    found.append(entry)
    return found


def _candidates(name: str, kind: str, choices: list[Any], passed: list[Any]) -> list[Any]:
    by_name = sizes.value_for(name)
    if is_off_switch(name):
        return [off_value(name)]
    read = tuple(sorted({c.name for c in choices if isinstance(c, _Attribute)}))
    called = tuple(sorted({c.name for c in choices if isinstance(c, _Attribute) and c.called}))
    if kind in ("module", "callable"):
        values: list[Any] = [_Elsewhere(k, c) for k, c in passed]
        values.append(_WithAttributes(read, called) if read and kind == "module"
                      else _Identity(kind))
        return values
    if kind == "choice":
        return [*(c for c in choices if isinstance(c, str)), None]
    if kind == "flag":
        return [False, True]
    if kind == "count":
        return [by_name] + [c for c in _COUNTS if c != by_name] if isinstance(
            by_name, int) and by_name <= 4 else list(_COUNTS)
    if kind == "sequence":
        width = by_name if isinstance(by_name, int) else _SIZES[0]
        exact = [c.n for c in choices if isinstance(c, _Length) and not c.at_least]
        least = max([c.n for c in choices if isinstance(c, _Length) and c.at_least] or [2])
        n = exact[0] if exact else least
        # widths; ones; more items; a sequence of sequences (aspect ratios per level)
        return [tuple([width] * n), tuple([1] * n), [width] * max(n, 4), [[2, 3]] * n]
    if kind == "config":  # an object whose attributes are read: one that has them
        return [_WithAttributes(read, called)] if read else []
    values = [by_name] if by_name is not None else []
    return values + [s for s in _SIZES if s not in values]


@dataclass(frozen=True)
class _Length:
    """``len(p) == n`` in the constructor: a sequence of ``n`` items (``p[n - 1]``: at
    least ``n``)."""

    n: int
    at_least: bool = False


@dataclass(frozen=True)
class _Mapping:
    """``f(**p)``: keyword arguments for ``f`` (those the call does not pass itself)."""

    callee: str
    passed: frozenset[str]


def _compared_length(call: ast.Call, parent: ast.AST | None) -> int | None:
    if not isinstance(parent, ast.Compare) or len(parent.comparators) != 1:
        return None
    if not isinstance(parent.ops[0], ast.Eq):
        return None
    other = parent.comparators[0] if parent.left is call else parent.left
    if isinstance(other, ast.Constant) and type(other.value) is int and 0 < other.value <= 16:
        return other.value
    return None


@dataclass(frozen=True)
class _Attribute:
    """``p.name`` read in the constructor (``called``: ``p.name(...)``, a layer factory)."""

    name: str
    called: bool = False


@dataclass(frozen=True)
class _WithAttributes:
    """An identity module carrying the attributes the constructor reads (``backbone.
    out_channels``, ``attn_layers.dim``), each a small size."""

    names: tuple[str, ...]
    #: those called (``layers.conv_norm_act(...)``): an identity module class
    called: tuple[str, ...] = ()

    def make(self, build: Callable[[type], Any]) -> Any:
        return StandIn(attributes=_attribute_values(self.names, self.called))

    def __repr__(self) -> str:
        return "nn.Identity(" + ", ".join(f"{n}=..." for n in self.names) + ")"


def _attribute_values(names: tuple[str, ...], called: tuple[str, ...]) -> dict[str, Any]:
    """Sizes for the attributes read, a stand-in class for those called."""
    values: dict[str, Any] = {}
    for name in names:
        value = StandIn if name in called else sizes.value_for(name)
        values[name] = guessed(value if value is not None else _SIZES[0])
    return values


@dataclass(frozen=True)
class _Shaped:
    """A stand-in with the methods the class calls on it, returning what its caller
    unpacks (``stand_ins.ShapedStandIn``)."""

    names: tuple[str, ...]
    called: tuple[str, ...]
    methods: tuple[str, ...]
    unpacked: int | None
    keys: tuple[str, ...]
    items: tuple[str | None, ...] = ()
    listed: bool = False

    def make(self, build: Callable[[type], Any]) -> Any:
        return ShapedStandIn(attributes=_attribute_values(self.names, self.called),
                             methods=self.methods, unpacked=self.unpacked, keys=self.keys,
                             items=self.items, listed=self.listed)

    def __repr__(self) -> str:
        shown = [f"{n}=..." for n in (*self.names, *self.methods)]
        if self.keys:
            shown.append("returns {" + ", ".join(repr(k) for k in self.keys) + "}")
        elif self.unpacked:
            shown.append(f"returns {self.unpacked} values")
        elif self.listed:
            shown.append("returns a list")
        return "nn.Identity(" + ", ".join(shown) + ")"


@dataclass(frozen=True)
class _StandInList:
    """A module list of identities, for a module argument the class indexes or measures."""

    length: int

    def make(self, build: Callable[[type], Any]) -> Any:
        return StandInList(self.length)

    def __repr__(self) -> str:
        return f"nn.ModuleList([nn.Identity()] * {self.length})"


@dataclass(frozen=True)
class _Identity:
    """An identity stand-in: a module for a module parameter, a module class (any arguments,
    an identity) for a callable one."""

    kind: str

    def make(self, build: Callable[[type], Any]) -> Any:
        return StandIn() if self.kind == "module" else StandIn

    def __repr__(self) -> str:
        return "nn.Identity()" if self.kind == "module" else "nn.Identity"


@dataclass
class _Elsewhere:
    kind: str  # "instance": built (with inferred arguments) | "class": the class itself
    cls: type

    def make(self, build: Callable[[type], Any]) -> Any:
        return build(self.cls) if self.kind == "instance" else self.cls

    def __repr__(self) -> str:
        return f"{self.cls.__name__}(...)" if self.kind == "instance" else self.cls.__name__


def realise(value: Any, build: Callable[[type], Any]) -> Any:
    """A candidate as the value passed: stand-in modules made, mappings' values too."""
    if isinstance(value, dict):
        return {k: realise(v, build) for k, v in value.items()}
    if isinstance(value, _Identity | _Elsewhere | _WithAttributes | _Shaped | _StandInList):
        return value.make(build)
    return guessed(value)


#: what a guess's failed use asks for instead (a guessed int that is called: a module;
#: measured, iterated or indexed: a sequence, a list of modules)
_OTHER_KINDS: dict[str, list[Any]] = {
    "call": [_Identity("module")],
    "len": [(_SIZES[0],) * 2, _StandInList(2)],
    "iterate": [_StandInList(2), (_SIZES[0],) * 2],
    "index": [(_SIZES[0],) * 2, _StandInList(2)],
}


def pinned(parameters: list[Parameter], assignment: dict[str, Any], name: str, misuse: str
           ) -> list[Parameter] | None:
    """The next plan after a trace failed on ``name``'s guess in ``assignment``: the other
    parameters keep the values that got the trace that far, ``name`` gets the kinds its
    failed use asks for, then its other candidates; None when ``name`` is none of them."""
    if not any(p.name == name for p in parameters):
        return None
    return [Parameter(p.name, p.kind, [*_OTHER_KINDS.get(misuse, []), *p.candidates])
            if p.name == name else Parameter(p.name, p.kind, [assignment[p.name]])
            for p in parameters if p.name in assignment]


def attempts(parameters: list[Parameter]) -> Iterator[dict[str, Any]]:
    """Assignments to try, in order: each parameter's first candidate; then one parameter
    at a time changed to each of its other candidates; then pairs of second choices."""
    if any(not p.candidates for p in parameters):
        return
    first = {p.name: p.candidates[0] for p in parameters}
    yield dict(first)
    count = 1
    for p in parameters:
        for value in p.candidates[1:]:
            if count >= MAX_ATTEMPTS:
                return
            count += 1
            yield {**first, p.name: value}
    for i, p in enumerate(parameters):
        for q in parameters[i + 1:]:
            if len(p.candidates) > 1 and len(q.candidates) > 1 and count < MAX_ATTEMPTS:
                count += 1
                yield {**first, p.name: p.candidates[1], q.name: q.candidates[1]}
