"""torch.fx itself as the reference for tests that claim agreement with it.

`torchfx_verdict(source, class_name, inputs)` runs the test's model source, builds the class with
no arguments, and asks `torch.fx.symbolic_trace` (eval mode, as fxls traces by default):

- "fails": symbolic_trace raises (the error's type and message in `detail`);
- "wrong": the GraphModule raises where the eager module runs on `inputs`, or its outputs
  differ (`allclose`, rtol 1e-4, atol 1e-5);
- "agrees": it traces and runs like the eager module (or both raise on `inputs`).

fxls is right when it reports an error (FX001-FX006, FX014) exactly when the verdict is not
"agrees".
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

ERROR_CODES = frozenset({"FX001", "FX002", "FX003", "FX004", "FX005", "FX006", "FX014"})


@dataclass
class Verdict:
    kind: str  # "fails" | "wrong" | "agrees"
    detail: str = ""

    @property
    def error(self) -> bool:
        return self.kind != "agrees"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def torchfx_verdict(source: str, class_name: str, inputs: tuple[Any, ...]) -> Verdict:
    module = types.ModuleType("torchfx_reference_model")
    exec(compile(source, f"<{class_name}>", "exec"), module.__dict__)
    torch.manual_seed(0)
    model = getattr(module, class_name)().eval()
    try:
        graph_module = torch.fx.symbolic_trace(model)
    except Exception as error:
        return Verdict("fails", f"{type(error).__name__}: {error}")
    with torch.no_grad():
        try:
            expected = model(*inputs)
        except Exception:
            return Verdict("agrees", "eager raises on these inputs")
        try:
            got = graph_module(*inputs)
        except Exception as error:
            return Verdict("wrong", f"{type(error).__name__}: {error}")
    if not _same(expected, got):
        return Verdict("wrong", "outputs differ")
    return Verdict("agrees")


def fxls_reports_error(result: dict, class_name: str) -> bool:
    """Whether an fxls file result has an error diagnostic for ``class_name``."""
    return any(
        d["code"] in ERROR_CODES and (
            d.get("module") == class_name or class_name in d.get("also_reached_from", ()))
        for d in result["diagnostics"]
    )
