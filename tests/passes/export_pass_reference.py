"""Torch's own answer for passes over torch.export's graphs, in a plain process (no fxls).

usage: python export_pass_reference.py CASE.py PASSES_JSON

``PASSES_JSON`` maps each pass of ``CASE.py`` to ``[form, takes]``: the form of the export
graph it gets (``graph_module``: ``ep.graph_module``; ``decomposed``: that of
``ep.run_decompositions()``; ``module``: ``ep.module()``; ``program``: the ExportedProgram;
``inductor``: Inductor's own post-grad graph, the pass given as
``post_grad_custom_post_pass`` to a real ``torch.compile``) and what it is handed (``graph``
or ``module``). For each pass, on the case's ``Net`` exported on ``torch.randn(2, 8)``: what
it raised, what ``graph.lint()`` raised after it, whether ``eliminate_dead_code()`` finds a
node it left dead, whether the module it returned runs other code than its graph (no
``recompile()``), and whether the outputs after it differ from the model's. Prints JSON.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from typing import Any

import torch


def main() -> None:
    path, passes = sys.argv[1], json.loads(sys.argv[2])
    spec = importlib.util.spec_from_file_location("case", path)
    assert spec is not None and spec.loader is not None
    case = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(case)
    answers = {name: answer(case, getattr(case, name), form, takes)
               for name, (form, takes) in passes.items()}
    print(json.dumps(answers))


def answer(case: Any, target: Any, form: str, takes: str) -> dict[str, Any]:
    torch.manual_seed(0)
    model, x = case.Net().eval(), torch.randn(2, 8)
    with torch.no_grad():
        expected = model(x)
    if form == "inductor":
        return _compiled(model, x, expected, target)
    program = torch.export.export(model, (x,))
    if form == "decomposed":
        program = program.run_decompositions()
    inputs = (x,) if form == "module" else program._graph_module_flat_inputs((x,), {})
    given = (program.module() if form == "module" else program if form == "program"
             else program.graph_module)
    owner = getattr(given, "graph_module", given)
    pass_ = target() if isinstance(target, type) else target
    try:
        result = pass_(owner.graph if takes == "graph" else given)
    except Exception as error:
        return {"raised": f"{type(error).__name__}: {error}"}
    module = getattr(result, "graph_module", result)
    module = module if isinstance(module, torch.fx.GraphModule) else owner
    found: dict[str, Any] = {"raised": None, "lint": _lint(module.graph)}
    if found["lint"] is None:  # (a graph out of order cannot even be copied)
        found["dead"] = _has_dead_code(module)
        found.update(_outputs(module, inputs, expected, stale=takes == "module"))
    return found


def _lint(graph: torch.fx.Graph) -> str | None:
    try:
        graph.lint()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def _has_dead_code(module: torch.fx.GraphModule) -> bool:
    return copy.deepcopy(module).graph.eliminate_dead_code()


def _outputs(module: torch.fx.GraphModule, inputs: Any, expected: torch.Tensor,
             stale: bool) -> dict[str, Any]:
    """Whether the module runs stale code (its outputs change with a ``recompile()``),
    and whether, recompiled, its outputs differ from the model's."""
    with torch.no_grad():
        as_returned = _first(module(*inputs))
        module.recompile()
        recompiled = _first(module(*inputs))
    return {"stale": stale and not torch.allclose(as_returned, recompiled),
            "outputs_differ": not torch.allclose(recompiled, expected, atol=1e-5)}


def _compiled(model: torch.nn.Module, x: torch.Tensor, expected: torch.Tensor,
              target: Any) -> dict[str, Any]:
    import torch._inductor.config as inductor_config

    pass_ = target() if isinstance(target, type) else target
    hooks = {"post_grad_custom_pre_pass": None, "post_grad_custom_post_pass": pass_}
    try:
        with inductor_config.patch(hooks), torch.no_grad():
            got = torch.compile(model)(x)
    except Exception as error:
        return {"raised": f"{type(error).__name__}: {error}"}
    return {"raised": None, "outputs_differ": not torch.allclose(got, expected, atol=1e-5)}


def _first(outputs: Any) -> torch.Tensor:
    return outputs[0] if isinstance(outputs, tuple | list) else outputs


if __name__ == "__main__":
    main()
