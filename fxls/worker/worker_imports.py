"""What the worker process imports into itself (never user code): its warm modules at
start (``warm_imports``), and what it learns to import from its jobs, decided by itself alone
(``ImportsToLearn``). A leaf module: the worker's entry point and its loop both use it.

A job reports the modules of the ``learn_imports`` packages it imported (an ``imports``
frame), so that the worker can import them for later jobs (``torch._dynamo``, which
torchvision and timm pull in, costs seconds per job). The job runs hostile code and can name
anything, so the frame is only a hint among names the worker chose: it keeps a name only if
it is a plain dotted name inside one of the packages its client named (e.g.
``torch._dynamo``, never a whole library), that is a file of that package where the worker
itself imported it from (the top package's ``__path__``: the interpreter's environment,
never a workspace); never a ``__main__`` module or a test module. Of those it imports the
outermost ones (importing a package brings what it imports), at most ``ROUND_LIMIT`` per job
and ``LIFETIME_LIMIT`` in the worker's life. A forged frame can at most make the worker warm
up, once, what it would have warmed up for a real job.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import traceback
from dataclasses import dataclass, field

#: names of one frame looked at (a job importing ``torch._dynamo`` reports ~320)
NAMES_LIMIT = 4000
#: modules the worker imports after one job (``torch._dynamo`` is one, bringing ~300 more)
ROUND_LIMIT = 16
#: modules the worker imports in its life
LIFETIME_LIMIT = 64

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}(\.[A-Za-z_][A-Za-z0-9_]{0,99}){1,12}\Z")
#: parts of a module name never learned: programs and test helpers (argv parsing, fixtures)
_REFUSED_PARTS = frozenset({"__main__", "test", "tests", "testing", "_testing", "conftest"})


def warm_imports(modules: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Import ``modules`` (never run user code); returns the import errors by module."""
    errors: dict[str, str] = {}
    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"
        _single_threaded_torch()
    return errors


_torch_threads_set = False


def _single_threaded_torch() -> None:
    """Forking after torch ran a multi-threaded op hangs the child: keep the parent at 1."""
    global _torch_threads_set
    torch = sys.modules.get("torch")
    if torch is None or _torch_threads_set:
        return
    try:
        torch.set_num_threads(1)
    except Exception:
        traceback.print_exc()
    _torch_threads_set = True


@dataclass
class ImportsToLearn:
    """The modules of ``packages`` jobs imported that the worker imports too, after the job
    that needed them (``note``, then ``next_round``)."""

    packages: tuple[str, ...]
    #: learnable names reported by jobs, not imported yet
    wanted: set[str] = field(default_factory=set)
    #: modules imported so far (``LIFETIME_LIMIT``)
    learned: int = 0

    def note(self, names: list[str]) -> None:
        self.wanted.update(names)

    def next_round(self) -> list[str]:
        """What to import now (``import_plan``); the rest of what jobs reported is dropped."""
        names = import_plan(self.wanted, LIFETIME_LIMIT - self.learned)
        self.wanted.clear()
        self.learned += len(names)
        return names


def learnable(names: object, packages: tuple[str, ...]) -> list[str]:
    """The names of an ``imports`` frame that the worker may learn (see the module doc)."""
    if not isinstance(names, list):
        return []
    kept = []
    for name in names[:NAMES_LIMIT]:
        if isinstance(name, str) and _NAME.match(name) and _is_package_file(name, packages):
            kept.append(name)
    return kept


def in_packages(name: str, packages: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``packages`` or inside one."""
    return any(name == package or name.startswith(package + ".") for package in packages)


def _is_package_file(name: str, packages: tuple[str, ...]) -> bool:
    if not in_packages(name, packages):
        return False
    top, *parts = name.split(".")
    if _REFUSED_PARTS.intersection(parts):
        return False
    package = sys.modules.get(top)
    roots = getattr(package, "__path__", None) if package is not None else None
    if not roots:
        return False
    for root in list(roots)[:1]:
        base = os.path.join(root, *parts)
        candidates = (base + ".py", os.path.join(base, "__init__.py"))
        real_root = os.path.realpath(root)
        for path in candidates:
            if os.path.isfile(path) and os.path.realpath(path).startswith(real_root + os.sep):
                return True
    return False


def import_plan(names: set[str], budget: int) -> list[str]:
    """What to import of ``names`` (already ``learnable``): the outermost names not loaded
    yet (a name whose package is in ``names`` comes with it), in order, at most ``budget``."""
    wanted = {name for name in names if name not in sys.modules}
    outermost = [name for name in sorted(wanted)
                 if not any(name.rsplit(".", depth)[0] in wanted
                            for depth in range(1, name.count(".")))]
    return outermost[: max(0, min(budget, ROUND_LIMIT))]
