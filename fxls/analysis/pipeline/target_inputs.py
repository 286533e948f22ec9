"""What the export and compile tracers run: a traced class's instance and example inputs.

The inputs are those the symbolic-trace tier found (an ``args`` pragma, the root's eager
run, or inferred from the graph); a partial graph still names the consumer of each input,
which is enough to infer them: code that ``symbolic_trace`` cannot trace (a loop over a
tensor, a branch on its value) is exactly what export and compile are asked about. A
forward whose every argument is optional (Hugging Face's ``input_ids=None, ...``) gets its
leading ones where their consumer fixes them, else what its first layer takes
(``first_layer_inputs``: the trace stopped before the input reached a layer).

A class whose inputs fxls guessed, or found none for, runs on what a model of the file
gives an instance of it where one does (``call_capture``): the eager run of each model,
made anyway to check guessed inputs, captures the first call of every such instance inside
it, keyword arguments included (a transformer layer's ``attention_mask=``, a detection head
after a ``flatten``, the blocks of a model whose trace was partial, which the observing
stage never ran). That is the code as its model uses it. Inputs the module itself cannot
run on (a guess that does not fit) are no run: what export or compile would say of them is
not about the code.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from fxcore.graph_module import GraphModule
from fxcore.source import SourceSpan
from fxls.analysis.construction import on_meta_device
from fxls.analysis.inputs import infer_inputs, retry_size
from fxls.analysis.pipeline.call_capture import Call, first_calls
from fxls.analysis.pipeline.first_layer_inputs import first_layer_inputs
from fxls.analysis.pipeline.symbolic_trace import TracedModule

NO_INPUTS = "not run: no example inputs (add `# fxls: args (...)` to the class)"
_ON_META = "not run: the instance was built on the meta device"
_RAISES = ("not run: the module raises on the example inputs fxls inferred; give it some "
           "with `# fxls: args (...)`")
_NOT_TENSORS = ("not run: its model calls it with values export cannot take as inputs "
                "(not tensors); give it some with `# fxls: args (...)`")


@dataclass(frozen=True)
class TargetRun:
    name: str
    instance: torch.nn.Module
    inputs: tuple[Any, ...]
    span: SourceSpan  # the class, where a failure with no user frame is reported
    #: keyword arguments, for inputs captured from a call that passed some
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: what export runs instead, when these inputs are more than tensors (a model's call
    #: that passes a cache object: dynamo takes it, export cannot); None: this run
    for_export: TargetRun | str | None = None

    def call_eagerly(self) -> Any:
        """One eager call on copies of the inputs (a forward may change what it is given)."""
        with torch.no_grad():
            torch.manual_seed(2)
            return self.instance(*copy.deepcopy(self.inputs), **copy.deepcopy(self.kwargs))


def target_runs(traced: list[TracedModule],
                wanted: Collection[str]) -> dict[str, TargetRun | str]:
    """The run of each class named in ``wanted``, or why there is none (a reason the user
    reads)."""
    own = {done.module_report.name: _own_inputs(done) for done in traced}
    # a class whose inputs fxls guessed runs, where a model of the file calls it, on that call
    calls = _Calls([done for done in traced
                    if done.module_report.name in wanted and done.inputs_inferred])
    runs: dict[str, TargetRun | str] = {}
    for done in sorted(traced, key=_whole_models_first):
        name = done.module_report.name
        inputs = own[name] if own[name] is not None else first_layer_inputs(done.instance)
        if inputs is None:
            continue
        if on_meta_device(done.instance) or any(
                isinstance(value, torch.Tensor) and value.is_meta for value in inputs):
            runs[name] = _ON_META
            continue
        run = TargetRun(name, done.instance, inputs, done.span)
        if name in wanted and done.inputs_inferred and not calls.capturing(run):
            sized = _at_its_size(done)  # small images first; a model that asserts its size
            if sized is None or not calls.capturing(run := replace(run, inputs=sized)):
                runs[name] = _RAISES  # unless a model of the file gives it inputs that fit
                continue
        runs[name] = run
    for run in [run for run in runs.values() if isinstance(run, TargetRun)]:
        if calls.inside(run.instance):  # (a model with its own inputs runs only when needed)
            calls.capturing(run)
    runs.update(calls.runs(runs))
    return {name: run for name, run in runs.items() if name in wanted}


def _whole_models_first(traced: TracedModule) -> tuple[bool, int]:
    """Roots before what was found inside them, bigger models first: a layer's call is
    captured where its whole model calls it (a layer built on its own, as fxls builds each
    class, may lack what its model sets up, e.g. a transformer's attention implementation)."""
    return traced.module_report.via is not None, -sum(1 for _ in traced.instance.modules())


def _own_inputs(traced: TracedModule) -> tuple[Any, ...] | None:
    inputs = traced.captured if traced.captured is not None else traced.ctx.example_inputs
    if inputs is None and traced.ctx.graph_module is not None:
        inputs = _inferred(traced.ctx.graph_module)
    return tuple(inputs) if inputs is not None else None


def _at_its_size(traced: TracedModule) -> tuple[Any, ...] | None:
    """Inputs of the image size the model says it expects (``spatial_size``: a ViT's
    ``img_size``, timm's ``pretrained_cfg``), else of the common one (``retry_size``)."""
    gm = traced.ctx.graph_module
    return _inferred(gm, retry_size(traced.instance)) if gm is not None else None


def _inferred(gm: GraphModule, size: tuple[int, int] | None = None) -> tuple[Any, ...] | None:
    for leading_optional in (False, True):
        try:
            found = infer_inputs(gm, size, leading_optional=leading_optional)
        except Exception:
            found = None
        if found is not None:
            return found
    return None


class _Calls:
    """The first call of each instance of the classes lacking inputs of their own (none, or
    guessed), as models run."""

    def __init__(self, lacking: list[TracedModule]) -> None:
        self._lacking = {type(done.instance): done for done in lacking}
        self._found: dict[type, tuple[torch.nn.Module, Call]] = {}
        self._exportable: dict[type, tuple[torch.nn.Module, Call]] = {}  # tensors only
        self._watched: set[int] = set()  # instances a finished run never called

    def inside(self, model: torch.nn.Module) -> list[torch.nn.Module]:
        """The instances inside ``model`` still to watch."""
        return [module for module in model.modules()
                if type(module) in self._lacking and type(module) not in self._exportable
                and id(module) not in self._watched and module is not model]

    def capturing(self, run: TargetRun) -> bool:
        """Run ``run`` eagerly, capturing the calls of the instances inside it; whether it
        ran without raising."""
        watched = self.inside(run.instance)
        with first_calls(watched) as calls:
            try:
                run.call_eagerly()
                ran = True
            except (Exception, SystemExit):  # the calls that returned still count
                ran = False
        for module in watched:
            call = calls.get(id(module))
            if call is not None:
                self._found.setdefault(type(module), (module, call))
                if call.exportable:
                    self._exportable.setdefault(type(module), (module, call))
            elif ran:
                self._watched.add(id(module))
        return ran

    def runs(self, known: dict[str, TargetRun | str]) -> dict[str, TargetRun | str]:
        """The runs of the classes that lacked inputs: on the call captured, else why not."""
        return {done.module_report.name: self._run_of(done, known)
                for done in self._lacking.values()}

    def _run_of(self, lacking: TracedModule,
                known: dict[str, TargetRun | str]) -> TargetRun | str:
        """The first call captured, else its own inputs, or why none."""
        name = lacking.module_report.name
        found = self._found.get(type(lacking.instance))
        own = known.get(name, NO_INPUTS)
        if found is None:
            return own
        instance, call = found
        return TargetRun(name, instance, call.args, lacking.span, call.kwargs,
                         None if call.exportable else self._for_export(lacking, own))

    def _for_export(self, lacking: TracedModule, own: TargetRun | str) -> TargetRun | str:
        """When the first call passed more than tensors: the first call of tensors only,
        else its own inputs that ran."""
        exportable = self._exportable.get(type(lacking.instance))
        if exportable is None:
            return own if isinstance(own, TargetRun) else _NOT_TENSORS
        instance, call = exportable
        return TargetRun(lacking.module_report.name, instance, call.args, lacking.span,
                         call.kwargs)
