"""Which function a frame is calling right now, read from its source, and who parses its args.

Used by the recovering trace when a traced value is asked for ``__index__``: if the frame
executing is in the middle of a call to a torch C function, the question comes from torch's
argument parser trying a size argument, and a torch.fx Proxy (which has no ``__index__``)
would simply fail that probe and be dispatched to ``__torch_function__``.

Python keeps no reference to the callable of a running ``CALL`` that we could read, so the
callee is read from the bytecode: the instructions that load it are the ones before the call
whose code position starts where the call's starts (``torch`` and ``torch.eye`` in
``torch.eye(n)``). Only a dotted name is understood (``LOAD_GLOBAL torch; LOAD_METHOD eye``),
and it is resolved without running user code: names through the frame's
locals/globals/builtins, attributes only of modules, classes, tensors (their class) and
``nn.Module`` instances (their parameter/buffer/submodule tables and ``__dict__``). The
source text is never needed, so an edited, unsaved file cannot mislead it.
"""

from __future__ import annotations

import dis
import inspect
import types
from typing import Any

import torch

__all__ = ["UNKNOWN", "called_function", "parsed_by_torch"]


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: the callee could not be found without running user code
UNKNOWN: Any = _Unknown()

_CALL_OPS = frozenset(dis.opmap[name] for name in ("CALL", "CALL_FUNCTION_EX") if name in dis.opmap)
_LOAD_NAME_OPS = frozenset({"LOAD_FAST", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF"})
_LOAD_ATTR_OPS = frozenset({"LOAD_ATTR", "LOAD_METHOD"})
_IGNORED_OPS = frozenset({"PUSH_NULL", "KW_NAMES", "PRECALL", "EXTENDED_ARG", "NOP"})

#: a dotted name: (load op, name), then attribute names
_Chain = tuple[tuple[str, str], tuple[str, ...]]

_instructions: dict[types.CodeType, list[dis.Instruction]] = {}
#: (code, offset of the call) -> the callee's dotted name, or None if it is not one
_chains: dict[tuple[types.CodeType, int], _Chain | None] = {}


def called_function(frame: types.FrameType) -> Any:
    """The function ``frame``'s current call instruction is calling, ``None`` if it is not at a
    call, or ``UNKNOWN``."""
    code = frame.f_code
    lasti = frame.f_lasti
    raw = code.co_code
    if not 0 <= lasti < len(raw) or raw[lasti] not in _CALL_OPS:
        return None
    key = (code, lasti)
    if key in _chains:
        chain = _chains[key]
    else:
        chain = _chains[key] = _callee_chain(code, lasti)
    if chain is None:
        return UNKNOWN
    try:
        return _resolve(chain, frame)
    except Exception:
        return UNKNOWN


def parsed_by_torch(fn: Any) -> bool:
    """Whether calling ``fn`` goes straight into torch's C argument parser."""
    if isinstance(fn, types.BuiltinFunctionType):  # also bound C methods
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, torch.Tensor):
            return True
        module = getattr(fn, "__module__", None) or ""
        if isinstance(owner, types.ModuleType):
            module = owner.__name__
        return module == "torch" or module.startswith("torch.")
    if isinstance(fn, types.MethodDescriptorType | types.WrapperDescriptorType):
        return issubclass(fn.__objclass__, torch._C.TensorBase)
    return False


def _callee_chain(code: types.CodeType, lasti: int) -> _Chain | None:
    instructions = _instructions.get(code)
    if instructions is None:
        instructions = _instructions[code] = list(dis.get_instructions(code))
    index = next((i for i, ins in enumerate(instructions) if ins.offset == lasti), None)
    if index is None:
        return None
    call = instructions[index].positions
    if call is None or call.lineno is None or call.col_offset is None:
        return None
    start = (call.lineno, call.col_offset)
    end = (call.end_lineno, call.end_col_offset)
    loads: list[dis.Instruction] = []
    for ins in reversed(instructions[:index]):
        pos = ins.positions
        if pos is None or pos.lineno is None or pos.col_offset is None:
            break
        if (pos.lineno, pos.col_offset) < start:
            break  # left the call expression
        inside = (pos.end_lineno, pos.end_col_offset) < end
        if (pos.lineno, pos.col_offset) == start and inside and ins.opname not in _IGNORED_OPS:
            loads.append(ins)
    loads.reverse()
    if not loads or loads[0].opname not in _LOAD_NAME_OPS:
        return None
    if any(ins.opname not in _LOAD_ATTR_OPS for ins in loads[1:]):
        return None
    return (loads[0].opname, loads[0].argval), tuple(ins.argval for ins in loads[1:])


def _resolve(chain: _Chain, frame: types.FrameType) -> Any:
    (op, name), attributes = chain
    if op in ("LOAD_FAST", "LOAD_DEREF"):
        namespaces = [frame.f_locals]
    elif op == "LOAD_GLOBAL":
        namespaces = [frame.f_globals, frame.f_builtins]
    else:
        namespaces = [frame.f_locals, frame.f_globals, frame.f_builtins]
    value = next((ns[name] for ns in namespaces if name in ns), UNKNOWN)
    for attribute in attributes:
        if value is UNKNOWN:
            break
        value = _attribute(value, attribute)
    return value


def _attribute(base: Any, name: str) -> Any:
    if isinstance(base, types.ModuleType | type):
        return getattr(base, name, UNKNOWN)
    if isinstance(base, torch.Tensor):
        method = inspect.getattr_static(type(base), name, UNKNOWN)
        return getattr(base, name, UNKNOWN) if parsed_by_torch(method) else UNKNOWN
    if isinstance(base, torch.nn.Module):
        state = base.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if name in state.get(table, {}):
                return state[table][name]
        if name in state:
            return state[name]
    return inspect.getattr_static(base, name, UNKNOWN)
