"""How a module class's methods use what its constructor stored (``self.backbone = backbone``),
read from the source of every class of its MRO up to torch's own: inherited ``__init__`` and
``forward`` included (``FCN`` takes both from ``_SimpleSegmentationModel``).

What the stand-in for a module argument must offer follows from it: whether it is called,
the methods called on it (``self.transform.postprocess(...)``), the attributes read, and what
the caller does with its output (``images, targets = self.transform(images, targets)``:
two values; ``features["out"]``: a dict with that key; ``features.values()``: several maps).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field

#: how many feature maps a stand-in returns where its caller takes ``.values()`` of its output
MAPS = ("0", "1", "2")


@dataclass
class MemberUse:
    """What the methods of a class do with ``self.<attribute>``."""

    called: bool = False
    methods: set[str] = field(default_factory=set)
    attributes: set[str] = field(default_factory=set)
    #: ``a, b = self.m(...)``: how many values the caller unpacks
    unpacked: int | None = None
    #: what the caller takes each unpacked value as: ``"mapping"`` (``losses.update(b)``),
    #: ``"sequence"`` (``for x in b``), or None (anything: the stand-in's input)
    items: tuple[str | None, ...] = ()
    #: ``out = self.m(...)`` then ``out["key"]``: the keys read (``.values()``: ``MAPS``)
    keys: list[str] = field(default_factory=list)
    #: ``len(self.m)``, ``self.m[i]``, ``for m in self.m``: a sequence of modules
    measured: bool = False

    #: ``out = self.m(...)`` then ``len(out)`` or ``for o in out``: a list of outputs
    listed: bool = False

    @property
    def output_shaped(self) -> bool:
        return bool(self.unpacked or self.keys or self.listed)


def class_trees(cls: type) -> Iterator[ast.ClassDef]:
    """The class definitions of ``cls``'s MRO, up to torch's own classes."""
    for klass in cls.__mro__:
        if klass is object or klass.__module__.startswith("torch."):
            return
        try:
            source = textwrap.dedent(inspect.getsource(klass))
            node = ast.parse(source).body[0]
        except (OSError, TypeError, SyntaxError, IndexError, ValueError):
            continue
        if isinstance(node, ast.ClassDef):
            yield node


def stored_as(init: ast.FunctionDef, name: str) -> set[str]:
    """The attributes ``__init__`` stores the parameter ``name`` in (``self.x = name``)."""
    return {
        target.attr for node in ast.walk(init) if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Name) and node.value.id == name
        for target in node.targets if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name) and target.value.id == "self"
    }


def member_use(classes: list[ast.ClassDef], attributes: set[str]) -> MemberUse:
    """How the methods (not ``__init__``) of ``classes`` use ``self.<a>`` for ``a`` in
    ``attributes``."""
    use = MemberUse()
    if not attributes:
        return use
    for class_node in classes:
        for method in class_node.body:
            if isinstance(method, ast.FunctionDef) and method.name != "__init__":
                _method_use(method, attributes, use)
    return use


def _is_member(node: ast.AST, attributes: set[str]) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in attributes
            and isinstance(node.value, ast.Name) and node.value.id == "self")


def _method_use(method: ast.FunctionDef, attributes: set[str], use: MemberUse) -> None:
    parents = {child: node for node in ast.walk(method) for child in ast.iter_child_nodes(node)}
    outputs: set[str] = set()
    for node in ast.walk(method):
        if not _is_member(node, attributes):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            use.called = True
            _output_use(parents.get(parent), use, outputs, method)
        elif isinstance(parent, ast.Attribute):
            call = parents.get(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                use.methods.add(parent.attr)
            else:
                use.attributes.add(parent.attr)
        elif _measures(node, parent):
            use.measured = True
    if outputs:
        _keys_read(method, outputs, use)


def _measures(node: ast.AST, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return True
    if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
        return True
    return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
            and parent.func.id in ("len", "enumerate", "zip", "list", "reversed"))


def _output_use(statement: ast.AST | None, use: MemberUse, outputs: set[str],
                method: ast.FunctionDef) -> None:
    """``a, b = self.m(...)`` (unpacked) or ``out = self.m(...)`` (``out`` read later)."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return
    target = statement.targets[0]
    if isinstance(target, ast.Tuple | ast.List) and not any(
            isinstance(e, ast.Starred) for e in target.elts):
        if len(target.elts) > (use.unpacked or 0):
            use.unpacked = len(target.elts)
            use.items = tuple(_taken_as(method, e.id, statement.lineno)
                              if isinstance(e, ast.Name) else None for e in target.elts)
    elif isinstance(target, ast.Name):
        outputs.add(target.id)


def _taken_as(method: ast.FunctionDef, name: str, assigned_at: int) -> str | None:
    """What ``method`` takes the local ``name`` as below the line that assigns it: a mapping
    (``d.update(name)``, ``name.items()``, ``name["key"]``, ``{**name}``), a sequence
    (iterated), or None."""
    parents = {child: node for node in ast.walk(method) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(method):
        if not (isinstance(node, ast.Name) and node.id == name and node.lineno > assigned_at
                and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(node)
        if (isinstance(parent, ast.Call) and node in parent.args
                and isinstance(parent.func, ast.Attribute) and parent.func.attr == "update"):
            return "mapping"
        if isinstance(parent, ast.Dict) and node in parent.values and None in parent.keys:
            return "mapping"
        if isinstance(parent, ast.Attribute) and parent.attr in ("items", "keys", "values"):
            return "mapping"
        if isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and \
                isinstance(parent.slice.value, str):
            return "mapping"
        if isinstance(parent, ast.For | ast.comprehension) and parent.iter is node:
            return "sequence"
    return None


def _keys_read(method: ast.FunctionDef, outputs: set[str], use: MemberUse) -> None:
    for node in ast.walk(method):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id in outputs and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str) and node.slice.value not in use.keys):
            use.keys.append(node.slice.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("values", "items", "keys")
              and isinstance(node.func.value, ast.Name) and node.func.value.id in outputs):
            use.keys.extend(k for k in MAPS if k not in use.keys)
        elif _measured(node, outputs):
            use.listed = True


def _measured(node: ast.AST, names: set[str]) -> bool:
    """``len(n)``, ``enumerate(n)``, ``zip(n, ...)``, ``for _ in n`` for ``n`` in ``names``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
            "len", "enumerate", "zip"):
        return any(isinstance(a, ast.Name) and a.id in names for a in node.args)
    return (isinstance(node, ast.For | ast.comprehension) and isinstance(node.iter, ast.Name)
            and node.iter.id in names)
