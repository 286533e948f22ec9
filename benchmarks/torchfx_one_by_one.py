"""torch.fx, one stop at a time: every site `torch.fx.symbolic_trace` stops at when the user
fixes each stop in turn, found in one run without editing the model's source.

    PYTHONPATH=~/.cache/fxls-model-zoo/site .venv/bin/python benchmarks/torchfx_one_by_one.py \
        [--model raft_small ...] [--mode eval|train] [--ops python|none] [--json OUT]

What "a site torch.fx stops at" means here. `torch.fx.symbolic_trace(model)` (every
`forward` parameter a placeholder, as torch.fx makes them; torchvision's `torch.fx.wrap`
functions and torch.fx's default leaf modules as they are) raises, and the innermost frame of
the raise outside torch (torch's own files and this script) is at `file:line`. That line is a
stop. The raises are torch.fx's own refusals:

- control flow: `Tracer.to_bool` (`if`, `while`, `assert`, `and`/`or`/`not`, `bool()`)
  raises `TraceError`;
- iteration: `Tracer.iter` (`for`, comprehensions, `*x`, `min(x)`; not unpacking of a
  known length, which torch.fx traces) raises `TraceError`;
- `len()` of a Proxy raises `RuntimeError`; `int()`/`float()`/`range()`/a list index of a
  Proxy raise `TypeError` (a Proxy has no `__int__`/`__float__`/`__index__`);
- any other exception raised while tracing (a `raise` in the model's code reached by a
  traced value, a `torch._assert(False, ...)`, an operator a Proxy does not support, an
  operator that does not exist in this install): the innermost frame outside torch.

"The user fixes the stop" means: the traced value at that site is replaced by the value the
eager run has there, so the trace goes on along the eager run's path. To know those values
without keying sites by visit counts, the trace is *concrete*: every node the tracer creates
also gets its eager value (placeholders: the example inputs and the defaults of the
parameters not passed; `get_attr`: the attribute; calls: the target run on the concrete
values of its arguments, leaf modules called for real), so a refused condition gets
`bool(value)`, an iteration the elements of `value` (`proxy[i]` for those holding tensors or
numbers, e.g. sizes; the eager element itself otherwise, e.g. a dict's keys; a traced dict's
items as `(key, d[key])`), `len` / `int` / `float` / `__index__` the value's. Control flow,
iteration and `len` are fixed in place (the trace goes on at once: fixing them in turn and
retracing reaches exactly the same sites); `int` /
`float` / `__index__` are fixed by a retrace that converts at that line only (torch's C
argument parser also asks a Proxy for `__index__` before dispatching to `__torch_function__`,
so converting everywhere would change what torch.fx traces); any other exception raised in
the model's code is fixed by a retrace with, in turn: the frame's local variables holding a
traced non-tensor value (a size, a shape, a count) holding its eager value from that line on
(the user makes the value static: `torch.tensor(num_channels)` with `num_channels` from
`x.shape`); then, within the innermost `if`/loop around the raising statement (else that
statement), `isinstance(proxy, C)` answering as for the eager value
(`torch._assert(isinstance(rel_codes, torch.Tensor), ...)`, or an `if isinstance(boxes,
torch.Tensor): ... else: torch._assert(False, ...)`). If the statement still raises, the run
ends there (the fix depends on what the user rewrites; the sites after it are not known).

Where the trace leaves the eager run's path without asking (`x is None` on a placeholder
whose eager value is `None`, `isinstance(proxy, torch.Tensor)`), a later stop may have no
eager value: it is still a stop torch.fx makes, recorded with `on_eager_path=False`, and the
trace goes on with the smallest value (False, nothing to iterate, 0).

A site is `(file, line)`; the same site stopped at again (a loop, a block called twice) counts
once, in the order first stopped at. The reference is reusable: `one_by_one(model, args,
kwargs)` returns a `OneByOne`; `MODELS` builds torchvision's RAFT, Faster R-CNN and Mask
R-CNN as fxls builds them (`weights=None, weights_backbone=None`) with example inputs.

torchvision's C++ ops are absent next to our CPU torch (`scripts/install_model_zoo.py`):
`roi_align` falls back to its Python implementation by itself; `nms` raises ("torchvision::nms
does not exist") in eager and traced runs alike. `--ops python` (the default) registers
a pure-Python `torchvision::nms` for the run, so the sites are those of a torchvision with
its ops; `--ops none` keeps the install as it is (the eager run then ends at the first `nms`,
and so does the trace: a stop in `torchvision/ops/boxes.py`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import ctypes
import dataclasses
import dis
import functools
import inspect
import json
import linecache
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch.fx
from torch.fx.proxy import Attribute, Proxy

TORCH_DIR = str(Path(torch.__file__).resolve().parent)
THIS_FILE = str(Path(__file__).resolve())

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<no eager value>"})()


@dataclasses.dataclass(frozen=True)
class Stop:
    """One site torch.fx stops at."""

    file: str
    line: int
    function: str
    kind: str  # "control flow" | "iteration" | "len" | "int" | "float" | "index" | "exception"
    message: str
    on_eager_path: bool = True

    @property
    def site(self) -> tuple[str, int]:
        return (self.file, self.line)

    def short(self) -> str:
        parts = Path(self.file).parts
        tail = "/".join(parts[-2:])
        mark = "" if self.on_eager_path else " (off the eager path)"
        return f"{tail}:{self.line} {self.kind}{mark}"


@dataclasses.dataclass
class OneByOne:
    """The stops of one model, in the order torch.fx meets them."""

    stops: list[Stop]
    traces: int
    concrete_args: list[str]  # parameters made concrete (None) after leaving the eager path
    ended_by: str | None  # the exception that ended the last trace, else None (a graph)
    nodes: int
    seconds: float

    @property
    def sites(self) -> list[tuple[str, int]]:
        return [s.site for s in self.stops]


class _Retrace(Exception):
    """Ends a trace that left the eager path because a parameter the call leaves at ``None``
    is a placeholder: the user's fix is ``concrete_args={name: None}``."""

    def __init__(self, names: set[str]) -> None:
        super().__init__(", ".join(sorted(names)))
        self.names = names


@functools.cache
def _is_internal(filename: str) -> bool:
    try:
        path = str(Path(filename).resolve())
    except OSError:
        path = filename
    return path.startswith(TORCH_DIR) or path == THIS_FILE or filename.startswith("<")


def _user_frame(frame: Any) -> Any:
    """The innermost frame outside torch and this script, from ``frame`` outwards."""
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _user_frame_of_traceback(tb: Any) -> tuple[str, int, str] | None:
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_internal(code.co_filename):
            found = (code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def _map(value: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(value, Proxy):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_map(v, fn) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _map(v, fn)) for k, v in value.items()) if type(value) is not dict \
            else {k: _map(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(_map(value.start, fn), _map(value.stop, fn), _map(value.step, fn))
    return value


_statements: dict[str, list[tuple[int, int, bool]]] = {}


_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def fix_lines(file: str, line: int) -> range:
    """Where the ``isinstance`` fix for an exception at ``line`` applies: the innermost ``if``/
    loop/``with``/``try`` around it (the test that chose the raising branch), else the
    statement at that line."""
    if file not in _statements:
        spans: list[tuple[int, int, bool]] = []
        try:
            tree = ast.parse("".join(linecache.getlines(file)))
        except (SyntaxError, ValueError):
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.stmt) and not isinstance(
                    node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                spans.append((node.lineno, node.end_lineno or node.lineno,
                              isinstance(node, _COMPOUND)))
        _statements[file] = spans
    spans = _statements[file]
    compound = [(start, end) for start, end, is_compound in spans
                if is_compound and start < line <= end]
    if compound:
        start, end = max(compound)
        return range(start, end + 1)
    ends = [end for start, end, _ in spans if start == line]
    return range(line, min(ends) + 1 if ends else line + 1)


class ConcreteProxy(Proxy):
    """A Proxy whose ``__class__`` is its eager value's class inside the statements where the
    ``isinstance`` fix applies, and Proxy elsewhere."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        tracer = self.tracer
        if type(tracer) is ConcreteTracer and tracer.isinstance_at and not _IN_CLASS:
            _IN_CLASS.append(True)
            try:
                # only the model's own isinstance calls: torch.fx's checks (create_arg's
                # `isinstance(a, torch.Tensor)`) must still see a Proxy
                frame = sys._getframe(1)
                if not _is_internal(frame.f_code.co_filename) and any(
                    frame.f_code.co_filename == file and frame.f_lineno in lines
                    for file, lines in tracer.isinstance_at
                ):
                    value = tracer.value_of(self)
                    if value is not _MISSING:
                        return type(value)
            finally:
                _IN_CLASS.pop()
        return type(self)


_IN_CLASS: list[bool] = []
ConcreteProxy.__name__ = ConcreteProxy.__qualname__ = "Proxy"  # in errors, as torch.fx says


class ConcreteTracer(torch.fx.Tracer):
    """torch.fx's Tracer, whose nodes carry their eager values and whose refusals record a
    stop and go on with the eager value."""

    def __init__(self, inputs: dict[str, Any], convert_at: set[tuple[str, int]],
                 isinstance_at: set[tuple[str, int]] | None = None) -> None:
        super().__init__()
        self.inputs = inputs
        self.convert_at = convert_at
        self.isinstance_at = [(file, fix_lines(file, line))
                              for file, line in sorted(isinstance_at or ())]
        self.values: dict[torch.fx.Node, Any] = {}
        self.stops: list[Stop] = []
        self._concrete_depth = 0

    def proxy(self, node: torch.fx.Node) -> Proxy:
        return ConcreteProxy(node, self)

    # -- concrete values ------------------------------------------------------------------
    @contextlib.contextmanager
    def concrete(self) -> Iterator[None]:
        self._concrete_depth += 1
        try:
            yield
        finally:
            self._concrete_depth -= 1

    def value_of(self, proxy: Proxy) -> Any:
        if isinstance(proxy, Attribute) and proxy._node is None:
            base = self.value_of(proxy.root)
            if base is _MISSING:
                return _MISSING
            try:
                with self.concrete():
                    return getattr(base, proxy.attr)
            except Exception:
                return _MISSING
        return self.values.get(proxy.node, _MISSING)

    def _compute(self, kind: str, target: Any, args: Any, kwargs: Any) -> Any:
        if kind == "placeholder":
            return self.inputs.get(str(target).lstrip("*"), _MISSING)
        missing = []

        def val(p: Proxy) -> Any:
            v = self.value_of(p)
            if v is _MISSING:
                missing.append(p)
            return v

        cargs = _map(args, val)
        ckwargs = _map(kwargs, val)
        if missing:
            return _MISSING
        with self.concrete():
            if kind == "get_attr":
                obj: Any = self.root
                for part in str(target).split("."):
                    obj = getattr(obj, part)
                return obj
            if kind == "call_function":
                return target(*cargs, **ckwargs)
            if kind == "call_method":
                return getattr(cargs[0], target)(*cargs[1:], **ckwargs)
            if kind == "call_module":
                return torch.fx._symbolic_trace._orig_module_call(
                    self.root.get_submodule(target), *cargs, **ckwargs
                )
        return _MISSING

    def create_proxy(self, kind: str, target: Any, args: Any, kwargs: Any, name: Any = None,
                     type_expr: Any = None, proxy_factory_fn: Any = None) -> Proxy:
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                     proxy_factory_fn)
        if kind != "output":
            try:
                self.values[proxy.node] = self._compute(kind, target, args, kwargs)
            except Exception:
                self.values[proxy.node] = _MISSING
        return proxy

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._concrete_depth:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any], args: Any,
                    kwargs: Any) -> Any:
        if self._concrete_depth:
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    # -- torch.fx's refusals ------------------------------------------------------------------
    def _stop(self, kind: str, message: str, on_path: bool, frame: Any = None) -> None:
        user = _user_frame(frame or sys._getframe(2))
        if user is None:
            return
        self.stops.append(Stop(user.f_code.co_filename, user.f_lineno, user.f_code.co_name,
                               kind, message, on_path))

    def _none_placeholders(self, obj: Proxy) -> set[str]:
        """The placeholders ``obj`` comes from whose eager value is ``None``."""
        found: set[str] = set()
        todo = [obj.node] if isinstance(obj, Proxy) and not (
            isinstance(obj, Attribute) and obj._node is None) else [obj.root.node] \
            if isinstance(obj, Attribute) else []
        seen: set[torch.fx.Node] = set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if node.op == "placeholder" and self.values.get(node, _MISSING) is None:
                found.add(str(node.target).lstrip("*"))
            todo.extend(node.all_input_nodes)
        return found

    def _off_path(self, obj: Proxy) -> None:
        names = self._none_placeholders(obj)
        if names:
            raise _Retrace(names)

    def _eager(self, obj: Proxy, op: Callable[[Any], Any]) -> Any:
        """``op`` of ``obj``'s eager value, or _MISSING when there is none (off the eager
        path: no value, or one the operation does not apply to, e.g. ``None``)."""
        value = self.value_of(obj)
        if value is _MISSING or value is None:
            return _MISSING
        try:
            with self.concrete():
                return op(value)
        except Exception:
            return _MISSING

    def to_bool(self, obj: Proxy) -> bool:
        value = self._eager(obj, bool)
        self._stop("control flow", "symbolically traced variables cannot be used as inputs to "
                   "control flow", value is not _MISSING)
        if value is _MISSING:
            self._off_path(obj)
        return False if value is _MISSING else value

    def iter(self, obj: Proxy) -> Iterator[Any]:
        keys = self._eager(obj, lambda v: list(v) if isinstance(v, dict) else None)
        count = self._eager(obj, len)
        on_path = count is not _MISSING
        self._stop("iteration", "Proxy object cannot be iterated", on_path)
        if not on_path:
            self._off_path(obj)
            return iter(())
        if keys is not _MISSING and keys is not None:
            return iter(keys)
        view = self._dict_view(obj)
        if view is not None:
            return iter(view)
        elements = self._eager(obj, list)
        # the user's fix keeps tensors and sizes traced (`x[i]`, `shape[i]`) and makes the rest
        # static (a dict's keys: "boxes")
        return iter([obj[i] if _has_tensor(element) or isinstance(element, (int, float))
                     else element for i, element in enumerate(elements)])

    def _dict_view(self, obj: Proxy) -> list[Any] | None:
        """``d.items()``/``keys()``/``values()`` of a traced dict: its eager keys, each value
        ``d[key]`` (a view cannot be indexed)."""
        node = obj.node
        if node.op != "call_method" or node.target not in ("items", "keys", "values"):
            return None
        if not node.args or not isinstance(node.args[0], torch.fx.Node):
            return None
        base = node.args[0]
        mapping = self.values.get(base, _MISSING)
        if not isinstance(mapping, dict):
            return None
        owner = self.proxy(base)
        if node.target == "keys":
            return list(mapping)
        if node.target == "values":
            return [owner[key] for key in mapping]
        return [(key, owner[key]) for key in mapping]

    def len_of(self, obj: Proxy, frame: Any) -> int:
        value = self._eager(obj, len)
        self._stop("len", "'len' is not supported in symbolic tracing by default",
                   value is not _MISSING, frame)
        if value is _MISSING:
            self._off_path(obj)
        return 0 if value is _MISSING else value

    def convert(self, obj: Proxy, kind: str, frame: Any) -> Any:
        user = _user_frame(frame)
        if user is not None and user.f_code.co_code[user.f_lasti] == _STORE_SUBSCR:
            # `proxy[key] = v` asks the key for __index__ first: torch.fx's error is this one
            raise TypeError(f"'{type(obj).__name__}' object does not support item assignment")
        if user is None or (user.f_code.co_filename, user.f_lineno) not in self.convert_at:
            raise TypeError(f"'Proxy' object cannot be converted ({kind})")
        value = self._eager(obj, {"int": int, "float": float, "index": int}[kind])
        self._stop(kind, f"{kind}() of a Proxy: TypeError", value is not _MISSING, frame)
        if value is _MISSING:
            self._off_path(obj)
            return 0.0 if kind == "float" else 0
        return value


def _has_tensor(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_has_tensor(v) for v in value.values())
    return False


_ACTIVE: list[ConcreteTracer] = []
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]
VERBOSE = False


def _proxy_len(self: Proxy) -> int:
    return _ACTIVE[-1].len_of(self, sys._getframe(1))


def _converter(kind: str) -> Callable[[Proxy], Any]:
    def convert(self: Proxy) -> Any:
        return _ACTIVE[-1].convert(self, kind, sys._getframe(1))
    return convert


@contextlib.contextmanager
def _patched_proxy(tracer: ConcreteTracer) -> Iterator[None]:
    """Proxy's ``__len__`` (and, at the lines being fixed, ``__int__``/``__float__``/
    ``__index__``) ask the tracer; restored afterwards."""
    saved = {name: Proxy.__dict__.get(name) for name in ("__len__", "__int__", "__float__",
                                                           "__index__")}
    _ACTIVE.append(tracer)
    Proxy.__len__ = _proxy_len  # type: ignore[method-assign]
    if tracer.convert_at:
        Proxy.__int__ = _converter("int")  # type: ignore[attr-defined]
        Proxy.__float__ = _converter("float")  # type: ignore[attr-defined]
        Proxy.__index__ = _converter("index")  # type: ignore[attr-defined]
    try:
        yield
    finally:
        _ACTIVE.pop()
        for name, original in saved.items():
            if original is None:
                if name in Proxy.__dict__:
                    delattr(Proxy, name)
            else:
                setattr(Proxy, name, original)


@contextlib.contextmanager
def _static_locals(tracer: ConcreteTracer, lines: set[tuple[str, int]]) -> Iterator[None]:
    """At each of ``lines``, a local variable holding a traced non-tensor value holds its eager
    value from then on (Python 3.11: written back with ``PyFrame_LocalsToFast``)."""
    if not lines:
        yield
        return
    files = {file for file, _ in lines}

    def local_trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and (frame.f_code.co_filename, frame.f_lineno) in lines:
            changed = False
            names = frame.f_locals  # one snapshot: each f_locals access refreshes it
            for name, value in list(names.items()):
                if isinstance(value, Proxy):
                    concrete = tracer.value_of(value)
                    if concrete is not _MISSING and not isinstance(concrete, torch.Tensor):
                        names[name] = concrete
                        changed = True
            if changed:
                ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
        return local_trace

    def global_trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename in files:
            return local_trace
        return None

    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        yield
    finally:
        sys.settrace(previous)


_CONVERSION_ERRORS = ("cannot be interpreted as an integer", "must be a string, a bytes-like "
                      "object or a real number, not 'Proxy'", "must be real number, not Proxy",
                      "indices must be integers or slices, not Proxy",
                      "cannot be converted")


def _conversion_kind(exc: BaseException) -> str | None:
    text = str(exc)
    if not isinstance(exc, TypeError) or "Proxy" not in text:
        return None
    if "float" in text or "real number" in text:
        return "float"
    if text.startswith("int()"):
        return "int"
    if any(marker in text for marker in _CONVERSION_ERRORS):
        return "index"
    return None


def _bind_inputs(model: torch.nn.Module, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = inspect.signature(model.forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def one_by_one(model: torch.nn.Module, args: tuple[Any, ...],
               kwargs: dict[str, Any] | None = None, max_traces: int = 40) -> OneByOne:
    """Every site torch.fx.symbolic_trace stops at for ``model``, the user fixing each stop in
    turn with the eager run's value at it (see the module's docstring)."""
    start = time.perf_counter()
    inputs = _bind_inputs(model, args, kwargs or {})
    convert_at: set[tuple[str, int]] = set()
    static_at: set[tuple[str, int]] = set()
    isinstance_at: set[tuple[str, int]] = set()
    concrete_args: dict[str, Any] = {}
    fixing: tuple[str, int] | None = None  # the exception site the next retrace tries to fix
    seen: dict[tuple[str, int], Stop] = {}
    order: list[Stop] = []
    traces = 0
    ended_by: str | None = None
    nodes = 0
    while traces < max_traces:
        traces += 1
        tracer = ConcreteTracer(inputs, set(convert_at), set(isinstance_at))
        # a trace can leave Proxies in the module (torchvision's AnchorGenerator assigns
        # `self.cell_anchors = [a.to(...) ...]`): each trace gets its own copy
        traced = copy.deepcopy(model)
        error: BaseException | None = None
        with _patched_proxy(tracer), torch.no_grad(), _static_locals(tracer, static_at):
            try:
                graph = tracer.trace(traced, concrete_args=dict(concrete_args) or None)
                nodes = len(graph.nodes)
            except Exception as exc:
                error = exc
        where = None if error is None else _user_frame_of_traceback(error.__traceback__)
        failed_fix = fixing is not None and (where is None or (where[0], where[1]) == fixing)
        if not failed_fix:  # a fix that did not help adds nothing (its stops are its own)
            for stop in tracer.stops:
                if stop.site not in seen:
                    seen[stop.site] = stop
                    order.append(stop)
        fixing = None
        if error is None:
            ended_by = None
            break
        if isinstance(error, _Retrace):
            concrete_args.update(dict.fromkeys(error.names))
            continue
        kind = _conversion_kind(error)
        if VERBOSE:
            print(f"  trace {traces}: {type(error).__name__}: {str(error)[:200]} at {where}, "
                  f"conversion {kind}", file=sys.stderr)
        if where is None:
            ended_by = f"{type(error).__name__}: {error} (in torch)"
            break
        site = (where[0], where[1])
        if kind is not None and site not in convert_at:
            convert_at.add(site)
            continue
        fixing = site
        if site not in seen:
            stop = Stop(where[0], where[1], where[2], "exception",
                        f"{type(error).__name__}: {str(error)[:300]}")
            seen[site] = stop
            order.append(stop)
        if site not in static_at:
            static_at.add(site)
            continue
        if site not in isinstance_at:
            isinstance_at.add(site)
            continue
        ended_by = f"{type(error).__name__}: {str(error)[:300]}"
        break
    seconds = time.perf_counter() - start
    return OneByOne(order, traces, sorted(concrete_args), ended_by, nodes, seconds)


# -- the models -------------------------------------------------------------------------------
def register_python_nms() -> bool:
    """A pure-Python ``torchvision::nms`` when torchvision's C++ ops are absent."""
    import torchvision
    from torchvision.ops import boxes as box_ops

    if torchvision.extension._has_ops():
        return False

    def nms(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
        order = scores.argsort(descending=True)
        keep = []
        suppressed = torch.zeros(len(order), dtype=torch.bool)
        ious = box_ops.box_iou(dets[order], dets[order])
        for i in range(len(order)):
            if suppressed[i]:
                continue
            keep.append(i)
            suppressed |= ious[i] > iou_threshold
        return order[torch.tensor(keep, dtype=torch.long)]

    lib = torch.library.Library("torchvision", "FRAGMENT")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.impl("nms", nms, "CPU")
    _LIBS.append(lib)
    box_ops._assert_has_ops = lambda: None  # type: ignore[attr-defined]
    return True


_LIBS: list[Any] = []


def _detection_targets(masks: bool) -> list[dict[str, torch.Tensor]]:
    target = {"boxes": torch.tensor([[10.0, 20.0, 90.0, 100.0], [30.0, 30.0, 60.0, 70.0]]),
              "labels": torch.tensor([1, 2])}
    if masks:
        mask = torch.zeros(2, 128, 128, dtype=torch.uint8)
        mask[0, 20:100, 10:90] = 1
        mask[1, 30:70, 30:60] = 1
        target["masks"] = mask
    return [target]


def build(name: str, mode: str) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    """torchvision's model ``name`` as fxls builds it, in ``mode``, with example inputs."""
    from torchvision.models import detection, optical_flow

    torch.manual_seed(0)
    if name.startswith("raft"):
        model = getattr(optical_flow, name)(weights=None)
        images = (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))
        model.train(mode == "train")
        return model, images, {}
    factory = getattr(detection, name)
    model = factory(weights=None, weights_backbone=None)
    model.train(mode == "train")
    images = [torch.rand(3, 128, 128)]
    if mode == "train":
        return model, (images, _detection_targets("mask" in name)), {}
    return model, (images,), {}


#: model -> (its file under torchvision/models, the class fxls attributes its diagnostics to)
MODELS = {
    "raft_small": ("optical_flow/raft.py", "RAFT"),
    "raft_large": ("optical_flow/raft.py", "RAFT"),
    "fasterrcnn_mobilenet_v3_large_fpn": ("detection/faster_rcnn.py", "FasterRCNN"),
    "fasterrcnn_resnet50_fpn": ("detection/faster_rcnn.py", "FasterRCNN"),
    "maskrcnn_resnet50_fpn": ("detection/mask_rcnn.py", "MaskRCNN"),
}


def fxls_sites(model: str) -> set[tuple[str, int]]:
    """The (file, line) of every fxls diagnostic of the model's class: `fxls check --format
    json` on its file in place, as a user runs it (FX001-FX004, also where reached from)."""
    import subprocess

    import torchvision

    file, owner = MODELS[model]
    path = Path(torchvision.__file__).parent / "models" / file
    repo = Path(__file__).resolve().parent.parent
    fxls = repo / ".venv" / "bin" / "fxls"
    command = [str(fxls)] if fxls.exists() else [sys.executable, "-m", "fxls"]
    done = subprocess.run([*command, "check", "--no-cache", "--format", "json", "--no-progress",
                           str(path)],
                          capture_output=True, text=True, timeout=900)
    sites: set[tuple[str, int]] = set()
    for report in json.loads(done.stdout)["files"]:
        for diagnostic in report["diagnostics"]:
            owners = {diagnostic.get("module"), *diagnostic.get("also_reached_from", ())}
            if owner in owners and diagnostic["code"] in ("FX001", "FX002", "FX003", "FX004"):
                sites.add((diagnostic.get("path", report["path"]),
                           diagnostic["range"]["start"]["line"] + 1))
    return sites


def eager_reaches(model: torch.nn.Module, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> str:
    """How far the eager run gets: "ok" or the exception that ends it."""
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except Exception as exc:
        where = _user_frame_of_traceback(exc.__traceback__)
        at = f" at {Path(where[0]).name}:{where[1]}" if where else ""
        return f"{type(exc).__name__}: {str(exc)[:200]}{at}"
    return "ok"


def run(name: str, mode: str) -> dict[str, Any]:
    model, args, kwargs = build(name, mode)
    eager = eager_reaches(model, args, kwargs)
    model, args, kwargs = build(name, mode)  # fresh: the eager run may have mutated state
    result = one_by_one(model, args, kwargs)
    return {
        "model": name, "mode": mode, "eager": eager,
        "stops": [dataclasses.asdict(s) for s in result.stops],
        "traces": result.traces, "concrete_args": result.concrete_args,
        "ended_by": result.ended_by, "nodes": result.nodes,
        "seconds": round(result.seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--mode", action="append", choices=["eval", "train"])
    parser.add_argument("--ops", choices=["python", "none"], default="python")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--verbose", action="store_true", help="print each trace's exception")
    parser.add_argument("--compare-fxls", action="store_true",
                        help="also run `fxls check` on the model's file: sites both report, "
                             "sites fxls misses, sites only fxls reports")
    options = parser.parse_args(argv)
    global VERBOSE
    VERBOSE = options.verbose
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("torchvision is not importable: install the model zoo "
              "(.venv/bin/python scripts/install_model_zoo.py) and put its site on PYTHONPATH")
        return 0
    if options.ops == "python":
        register_python_nms()
    results = []
    for name in options.model or sorted(MODELS):
        for mode in options.mode or ["eval", "train"]:
            try:
                result = run(name, mode)
            except Exception:
                print(f"{name} ({mode}): failed\n{traceback.format_exc()}")
                continue
            results.append(result)
            print(f"{name} ({mode}): {len(result['stops'])} sites, {result['traces']} traces, "
                  f"{result['seconds']} s; concrete_args (None): {result['concrete_args']}; "
                  f"eager: {result['eager']}")
            for stop in result["stops"]:
                print("   ", Stop(**stop).short(), "|", stop["message"][:100])
            if result["ended_by"]:
                print("    ended by:", result["ended_by"][:200])
            if options.compare_fxls:
                found = fxls_sites(name)
                expected = [Stop(**stop) for stop in result["stops"]]
                missed = [s.short() for s in expected if s.site not in found]
                extra = sorted(f"{'/'.join(Path(f).parts[-2:])}:{n}" for f, n in
                               found - {s.site for s in expected})
                result["fxls"] = {"reported": len(expected) - len(missed), "missed": missed,
                                  "only_fxls": extra}
                print(f"    fxls: {len(expected) - len(missed)} of {len(expected)} reported; "
                      f"missed {missed}; only fxls {extra}")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
