"""The worker protocol's messages as records: one frozen dataclass per operation (``Op``),
decoded once where it arrives (``decode_request`` in the worker, ``decode_event`` in the
client) and handed whole to its handler, whose parameters are the record's fields (as
pytest-xdist's ``worker_<event>`` handlers take an event's); and the worker's start-up
configuration (``WorkerConfig``).

A message that does not fit is a ``ProtocolError`` of one line naming the operation and the
member that is wrong. What the other side only hints at (the sources of a job, the roots and
modules of a ``warm``, the facts of ``ready``) is taken leniently: what does not fit is left
out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import ClassVar, Self, TypeVar

from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import PROTOCOL_VERSION, JsonValue, Op, ProtocolError, short

_NONE = type(None)
_R = TypeVar("_R")

#: what the kernel enforces for a worker's jobs (``sandbox.Support``), with a summary
SandboxFacts = dict[str, str | bool | int]
#: [file, line] of the innermost frame of each file a job's main thread was last seen in
WhereLines = list[list[str | int]]


class Members:
    """The members of one message (``what``: its operation, in errors), each read with its
    type checked."""

    def __init__(self, message: dict[str, JsonValue], what: str) -> None:
        self.message = message
        self.what = what

    def _wrong(self, name: str, types: tuple[type, ...]) -> ProtocolError:
        return ProtocolError(f"{self.what}: {name!r} is {short(self.message.get(name))}, "
                             f"expected {' or '.join(t.__name__ for t in types)}")

    def integer(self, name: str) -> int:
        value = self.message.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise self._wrong(name, (int,))

    def number(self, name: str) -> float:
        value = self.message.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise self._wrong(name, (int, float))

    def optional_number(self, name: str) -> float | None:
        if self.message.get(name) is None:
            return None
        try:
            return self.number(name)
        except ProtocolError:
            raise self._wrong(name, (int, float, _NONE)) from None

    def text(self, name: str) -> str:
        value = self.message.get(name)
        if isinstance(value, str):
            return value
        raise self._wrong(name, (str,))

    def flag(self, name: str) -> bool:
        value = self.message.get(name)
        if isinstance(value, bool):
            return value
        raise self._wrong(name, (bool,))

    def listed(self, name: str) -> list[JsonValue]:
        value = self.message.get(name)
        if isinstance(value, list):
            return value
        raise self._wrong(name, (list,))

    def optional_object(self, name: str) -> dict[str, JsonValue] | None:
        value = self.message.get(name)
        if value is None or isinstance(value, dict):
            return value
        raise self._wrong(name, (dict, _NONE))

    # lenient: what does not fit is left out
    def texts(self, name: str) -> tuple[str, ...]:
        value = self.message.get(name)
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    def maybe_int(self, name: str) -> int | None:
        value = self.message.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def maybe_number(self, name: str) -> float | None:
        value = self.message.get(name)
        return float(value) if isinstance(value, int | float) and not isinstance(
            value, bool) else None

    def maybe_text(self, name: str) -> str | None:
        value = self.message.get(name)
        return value if isinstance(value, str) else None


class OperationOnly:
    """A message that is its operation alone: reading it is making it."""

    __slots__ = ()

    @classmethod
    def read(cls, members: Members) -> Self:
        return cls()


# ------------------------------------------------------------------ requests
@dataclass(frozen=True, slots=True)
class RunRequest:
    """Run ``target(params)`` in a job process. The params are the frame after this one
    (``body`` bytes of JSON, a length ``protocol.with_body`` sets: encoded once by the
    client, decoded once by the job process; the worker forwards them untouched).
    ``policy``: what the job may do and use; ``sources``: the absolute paths of its own code
    (its document, its project root)."""

    op: ClassVar[Op] = Op.RUN
    id: int
    target: str
    timeout: float | None
    policy: JobPolicy
    body: int
    sources: tuple[str, ...] = ()

    @classmethod
    def read(cls, members: Members) -> RunRequest:
        return cls(members.integer("id"), members.text("target"),
                   members.optional_number("timeout"),
                   JobPolicy.from_dict(members.optional_object("policy")),
                   members.integer("body"), members.texts("sources"))


@dataclass(frozen=True, slots=True)
class WarmRequest:
    """Libraries to learn ahead of any job (a workspace's imports); nothing is learned from
    inside ``roots`` (the workspace folders)."""

    op: ClassVar[Op] = Op.WARM
    modules: tuple[str, ...]
    roots: tuple[str, ...] = ()

    @classmethod
    def read(cls, members: Members) -> WarmRequest:
        members.listed("modules")
        return cls(members.texts("modules"), members.texts("roots"))


@dataclass(frozen=True, slots=True)
class CancelRequest:
    op: ClassVar[Op] = Op.CANCEL
    id: int

    @classmethod
    def read(cls, members: Members) -> CancelRequest:
        return cls(members.integer("id"))


@dataclass(frozen=True, slots=True)
class PingRequest(OperationOnly):
    op: ClassVar[Op] = Op.PING


@dataclass(frozen=True, slots=True)
class ShutdownRequest(OperationOnly):
    op: ClassVar[Op] = Op.SHUTDOWN


Request = RunRequest | WarmRequest | CancelRequest | PingRequest | ShutdownRequest


# -------------------------------------------------------------------- events
@dataclass(frozen=True, slots=True)
class Ready:
    """The worker started (the handshake's second half): its protocol, what failed to import,
    what its sandbox enforces, its zygote (None: it forks the job processes itself)."""

    op: ClassVar[Op] = Op.READY
    pid: int
    protocol: int
    python: str = ""
    import_errors: dict[str, str] = field(default_factory=dict)
    sandbox: SandboxFacts | None = None
    zygote: int | None = None

    @classmethod
    def read(cls, members: Members) -> Ready:
        errors = members.message.get("import_errors")
        facts = members.message.get("sandbox")
        return cls(
            members.integer("pid"), members.integer("protocol"),
            members.maybe_text("python") or "",
            {k: v for k, v in errors.items() if isinstance(v, str)}
            if isinstance(errors, dict) else {},
            {k: v for k, v in facts.items() if isinstance(v, str | bool | int)}
            if isinstance(facts, dict) else None,
            members.maybe_int("zygote"))


@dataclass(frozen=True, slots=True)
class Started:
    """A job process runs the job ``id`` (a run the worker dies before is run again)."""

    op: ClassVar[Op] = Op.STARTED
    id: int

    @classmethod
    def read(cls, members: Members) -> Started:
        return cls(members.integer("id"))


@dataclass(frozen=True, slots=True)
class Partial:
    """Part of job ``id``'s result, ahead of it: the job's own bytes follow
    (``protocol.attach``)."""

    op: ClassVar[Op] = Op.PARTIAL
    id: int

    @classmethod
    def read(cls, members: Members) -> Partial:
        members.integer("body")
        return cls(members.integer("id"))


@dataclass(frozen=True, slots=True)
class Result:
    """Job ``id`` ended: its final frame follows (``protocol.attach``), the job's own
    (``own``: untrusted) or one the worker made; ``where``: the lines its main thread was
    last seen running, for a job that did not end on its own."""

    op: ClassVar[Op] = Op.RESULT
    id: int
    status: str
    own: bool
    output: str
    duration_ms: float
    where: WhereLines | None = None

    @classmethod
    def read(cls, members: Members) -> Result:
        record = cls(members.integer("id"), members.text("status"), members.flag("own"),
                     members.text("output"), members.number("duration_ms"),
                     where_lines(members.message.get("where")))
        members.integer("body")
        return record


@dataclass(frozen=True, slots=True)
class Pong(OperationOnly):
    op: ClassVar[Op] = Op.PONG


@dataclass(frozen=True, slots=True)
class Busy(OperationOnly):
    """The worker is about to block its loop for seconds (the heartbeat waits longer)."""

    op: ClassVar[Op] = Op.BUSY


@dataclass(frozen=True, slots=True)
class Refused:
    """The worker refused request ``id`` (None: it could not tell which): why, in words."""

    op: ClassVar[Op] = Op.ERROR
    id: int | None
    error: str

    @classmethod
    def read(cls, members: Members) -> Refused:
        return cls(members.maybe_int("id"), members.text("error"))


Event = Ready | Started | Partial | Result | Pong | Busy | Refused

_REQUESTS: dict[Op, Callable[[Members], Request]] = {
    Op.RUN: RunRequest.read, Op.WARM: WarmRequest.read, Op.CANCEL: CancelRequest.read,
    Op.PING: PingRequest.read, Op.SHUTDOWN: ShutdownRequest.read,
}
_EVENTS: dict[Op, Callable[[Members], Event]] = {
    Op.READY: Ready.read, Op.STARTED: Started.read, Op.PARTIAL: Partial.read,
    Op.RESULT: Result.read, Op.PONG: Pong.read, Op.BUSY: Busy.read, Op.ERROR: Refused.read,
}


def decode_request(message: JsonValue) -> Request:
    """The record of a request the worker received; ProtocolError if it does not fit."""
    return _decode(message, _REQUESTS)


def decode_event(message: JsonValue, expected: tuple[Op, ...] | None = None) -> Event:
    """The record of a message the client received (of the ``expected`` operations only,
    when given); ProtocolError if it does not fit."""
    table = _EVENTS if expected is None else {op: _EVENTS[op] for op in expected}
    return _decode(message, table)


def _decode(message: JsonValue, table: dict[Op, Callable[[Members], _R]]) -> _R:
    if not isinstance(message, dict):
        raise ProtocolError(f"not an object: {short(message)}")
    try:
        op = Op(message.get("op"))
    except ValueError:
        raise ProtocolError(f"unknown operation {short(message.get('op'))}") from None
    read = table.get(op)
    if read is None:
        raise ProtocolError(f"operation {op.value!r} is not expected here")
    return read(Members(message, op.value))


def message_of(record: Request | Event) -> dict[str, JsonValue]:
    """The JSON object that carries ``record``: ``op`` first, then its fields."""
    message: dict[str, JsonValue] = {"op": record.op.value}
    for member in fields(record):
        value = getattr(record, member.name)
        message[member.name] = value.to_dict() if isinstance(value, JobPolicy) else value
    return message


def where_lines(value: JsonValue) -> WhereLines | None:
    """The [file, line] pairs of an untrusted ``where`` list, or None when it is not one."""
    if not isinstance(value, list):
        return None
    pairs: WhereLines = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2):
            return None
        name, line = item
        if not isinstance(name, str) or type(line) is not int:
            return None
        pairs.append([name, line])
    return pairs


# -------------------------------------------------------------- configuration
@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What the client starts the worker with (``python -m fxls.worker '<json>'``).

    ``warm_imports``: imported once by the worker; ``warm_up``/``prime``: warm-up targets
    (``fxls.worker.api``), in each idle job process / once in the worker; ``learn_imports``:
    packages whose modules jobs import are imported by the worker after them;
    ``learn_libraries``: its zygotes learn the installed libraries jobs import; ``roots``:
    where the worker never imports from outside a job; ``python_path``: the user's absolute
    PYTHONPATH entries, put back for the jobs; ``sandbox``/``jobs_dir``: jobs run confined,
    their private folders in ``jobs_dir``."""

    protocol: int = PROTOCOL_VERSION
    warm_imports: tuple[str, ...] = ()
    memory_limit_mb: int | None = None
    cpu_limit_s: float | None = None
    warm_up: str | None = None
    warm_from: str | None = None
    prime: str | None = None
    learn_imports: tuple[str, ...] = ()
    learn_libraries: bool = False
    roots: tuple[str, ...] = ()
    python_path: tuple[str, ...] = ()
    sandbox: bool = False
    jobs_dir: str | None = None

    def to_json(self) -> str:
        return json.dumps({member.name: getattr(self, member.name) for member in fields(self)})

    @classmethod
    def from_message(cls, message: JsonValue) -> WorkerConfig:
        """The configuration ``to_json`` gave (the version is checked before: ``protocol``
        here is only what was sent); a member that does not fit takes its default."""
        if not isinstance(message, dict):
            return cls()
        members = Members(message, "worker config")
        return cls(
            protocol=members.maybe_int("protocol") or 0,
            warm_imports=members.texts("warm_imports"),
            memory_limit_mb=members.maybe_int("memory_limit_mb"),
            cpu_limit_s=members.maybe_number("cpu_limit_s"),
            warm_up=members.maybe_text("warm_up"),
            warm_from=members.maybe_text("warm_from"),
            prime=members.maybe_text("prime"),
            learn_imports=members.texts("learn_imports"),
            learn_libraries=message.get("learn_libraries") is True,
            roots=members.texts("roots"),
            python_path=members.texts("python_path"),
            sandbox=message.get("sandbox") is True,
            jobs_dir=members.maybe_text("jobs_dir"),
        )
