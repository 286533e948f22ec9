"""Where the module classes of a traced graph are defined (``ModuleReport.class_places``):
the user's file for its own classes, the library's file for timm's ``Block`` or torch's
``Linear``, as the graph page's group panel links them.

``inspect.findsource`` parses the whole file to find a class (a second for timm's
``vision_transformer.py`` on a busy machine); the class's own methods already say where
its body is, so the ``class`` line is the nearest one above the first of them, found in the
file's lines as Python read them (linecache: the analysed text for the user's file)."""

from __future__ import annotations

import inspect
import linecache
import re
from typing import Any

from fxcore.graph_module import GraphModule
from fxls.report import ClassPlace


def qualified_name(cls: type) -> str:
    """``torch.nn.modules.linear.Linear``: how reports name a module's class."""
    return f"{cls.__module__}.{cls.__qualname__}"


def class_places(gm: GraphModule) -> dict[str, ClassPlace]:
    """The place of every submodule class ``gm``'s nodes came from (traced through, or
    called as a leaf), by qualified name; classes without a source file are left out."""
    classes: dict[str, type] = {}
    for node in gm.graph.nodes:
        for _path, cls in (node.meta.get("nn_module_stack") or {}).values():
            if isinstance(cls, type):
                classes.setdefault(qualified_name(cls), cls)
        if node.op == "call_module":
            try:
                cls = type(gm.get_submodule(str(node.target)))
            except AttributeError:
                continue
            classes.setdefault(qualified_name(cls), cls)
    places = {name: class_place(cls) for name, cls in classes.items()}
    return {name: place for name, place in places.items() if place is not None}


def class_place(cls: type) -> ClassPlace | None:
    """The file and ``class`` line of ``cls``; None when its source cannot be found."""
    try:
        file = inspect.getsourcefile(cls)
    except (TypeError, OSError):  # a built-in class, or one made without a file
        return None
    if not file:
        return None
    lines = linecache.getlines(file)
    header = re.compile(rf"\s*class\s+{re.escape(cls.__name__)}\b")
    body = _first_method_line(cls, file)
    if body is not None:
        for number in range(min(body, len(lines)), 0, -1):
            if header.match(lines[number - 1]):
                return ClassPlace(file, number)
        return None
    # no method of its own: the first class of that name in the file
    return next((ClassPlace(file, number) for number, text in enumerate(lines, 1)
                 if header.match(text)), None)


def _first_method_line(cls: type, file: str) -> int | None:
    """The first line of the earliest function defined in ``cls``'s body (its decorators
    included), None when it defines none."""
    prefix = cls.__qualname__ + "."
    starts = [code.co_firstlineno for code in map(_code_of, vars(cls).values())
              if code is not None and code.co_filename == file
              and code.co_qualname.startswith(prefix)]
    return min(starts, default=None)


def _code_of(member: Any) -> Any:
    function = getattr(member, "__func__", member)  # staticmethod, classmethod
    if isinstance(member, property):
        function = member.fget
    return getattr(function, "__code__", None)
