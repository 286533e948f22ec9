"""The graphs a pass over torch.export's graphs runs on: each model of the file exported
(``torch.export.export``, non-strict as by default) on the instance and example inputs the
pipeline found for it, and handed to each pass in the form the file gives it
(``ExportForm``): the ``ExportedProgram``, its ``graph_module`` (the parameters lifted to
inputs), that graph in core ATen operators (``run_decompositions``: what Inductor's post-grad
passes get) or the module ``ep.module()`` unlifts.

The graphs stay torch.fx's: the pass runs on what torch gives it (ATen operator targets,
``meta["val"]``), and the checks after it read torch.fx and fxcore graphs alike, the edits
recorded by the same ``EditLog``. The model is exported once, from a copy with realistic
values (``module_copies``); each pass gets a deep copy of its graph (a few ms), and its
result runs on the same values as the graph before it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from fxls.analysis.passes.checks import EXPORT_SUFFIX
from fxls.analysis.passes.edits import EditLog
from fxls.analysis.passes.module_copies import copy_modules, give_realistic_values
from fxls.analysis.passes.parameters import ExportForm
from fxls.analysis.passes.runner import Subject


@dataclass(slots=True)
class ExportedModel:
    name: str
    program: Any  # torch.export.ExportedProgram
    #: its example inputs (None: a program the file made whose inputs it did not keep)
    args: tuple[Any, ...] | None
    kwargs: dict[str, Any] = field(default_factory=dict)

    #: ``program.run_decompositions()``, made when a pass wants it
    decomposed: Any = None

    @property
    def label(self) -> str:
        return export_label(self.name)

    def in_core_aten(self) -> Any:
        if self.decomposed is None:
            self.decomposed = self.program.run_decompositions()
        return self.decomposed


def export_label(name: str) -> str:
    return f"{name}{EXPORT_SUFFIX}"


def export_model(name: str, instance: torch.nn.Module, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> ExportedModel | str:
    """The model exported, or why it was not (a reason the user reads)."""
    try:
        realistic = give_realistic_values(copy_modules(instance)).eval()
        program = torch.export.export(realistic, args, kwargs or None)
    except Exception as error:  # the model's own problem: the export tier reports it
        what = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return (f"not run: `{name}` does not export ({type(error).__name__}"
                f"{': ' + what[:200] if what else ''})")
    return ExportedModel(name, program, args, kwargs)


def global_programs(namespace: dict[str, Any], log: EditLog) -> dict[str, ExportedModel]:
    """The ExportedPrograms the file keeps in its globals (``ep = torch.export.export(model,
    ...)`` at module level) that no pass edited at import, with the inputs they keep."""
    found: dict[str, ExportedModel] = {}
    seen: set[int] = set()
    for name, value in list(namespace.items()):
        if not isinstance(value, torch.export.ExportedProgram) or name.startswith("_") or (
                id(value) in seen or log.graph_state(value.graph) is not None):
            continue
        seen.add(id(value))
        args, kwargs = value.example_inputs or (None, {})
        found[name] = ExportedModel(name, value, args, kwargs)
    return found


def export_subject(model: ExportedModel | str, form: ExportForm) -> Subject | str:
    """The model's export graph in ``form``, a fresh copy of it for each pass; or why
    there is none."""
    if isinstance(model, str):
        return model
    try:
        return _subject(model, form)
    except Exception as error:  # torch refused to decompose or unlift the graph
        what = "run_decompositions()" if form is ExportForm.DECOMPOSED else "module()"
        return f"not run: `{what}` failed on its export ({type(error).__name__})"


def _subject(model: ExportedModel, form: ExportForm) -> Subject:
    program = model.in_core_aten() if form is ExportForm.DECOMPOSED else model.program
    lifted = program.graph_module
    if form is ExportForm.MODULE:
        unlifted = program.module()
        inputs = None if model.kwargs or model.args is None else model.args
        return Subject(model.label, unlifted, unlifted, lambda: inputs,
                       lambda: copy.deepcopy(unlifted))
    flat = None if model.args is None else _lifted_inputs(program, model.args, model.kwargs)
    fresh = ((lambda: copy.deepcopy(program)) if form is ExportForm.PROGRAM
             else (lambda: copy.deepcopy(lifted)))
    return Subject(model.label, lifted, lifted, lambda: flat, fresh)


def _lifted_inputs(program: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[Any, ...] | None:
    """What ``ep.graph_module`` takes: its parameters, buffers and constants in the
    signature's order, the user's inputs flattened where it takes them."""
    from torch.export.graph_signature import InputKind
    from torch.utils._pytree import tree_flatten

    user = iter(tree_flatten((args, kwargs))[0])
    values: list[Any] = []
    for spec in program.graph_signature.input_specs:
        if spec.kind is InputKind.USER_INPUT:
            values.append(next(user, None))
        elif spec.target in program.state_dict:
            values.append(program.state_dict[spec.target])
        elif spec.target in program.constants:  # non-persistent buffers, constant tensors
            values.append(program.constants[spec.target])
        else:
            return None  # an effect token or an input fxls does not know how to give
    return tuple(values)
