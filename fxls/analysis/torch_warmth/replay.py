"""In a job process waiting for its job: fill torch's caches from what an earlier job
described (``fxls.worker.api.send_warmth``; ``warmth`` here), so that the next job of the
same file meets them warm. Runs no user code: it rebuilds the graphs from data
(``graph_data``) and runs them through export or dynamo as the job's tiers did, then warms
dynamo's caches of the libraries' files and functions (``code_caches``). It stops between
graphs once the job has arrived.
"""

from __future__ import annotations

from typing import Any

from fxls.analysis.torch_warmth import code_caches, graph_data
from fxls.codes import Target

EXPORT, COMPILE = Target.EXPORT.value, Target.COMPILE.value
#: graphs a warmth value holds at most
MAX_GRAPHS = 64


def warmth(key: str, graphs: list[tuple[str, list[Any]]],
           code: code_caches.CodeNames) -> dict[str, Any]:
    """The value a job sends: its file (``key``: the worker keeps one value per key), the
    graphs described per tier, and what dynamo read."""
    return {"key": key, "graphs": [{"tier": tier, "nodes": nodes}
                                   for tier, nodes in graphs[:MAX_GRAPHS]],
            "code": code.to_json()}


def warm_from(value: Any) -> None:
    """Replay ``value``'s graphs, then warm dynamo's code caches; errors are the caller's to
    swallow (a description this torch cannot replay only means a cold cache)."""
    import torch

    from fxls.worker.api import job_waiting
    if not isinstance(value, dict):
        return
    generator = torch.random.get_rng_state()  # a graph's dropout draws: the job's must not
    bar = _progress_bar()
    monitor = getattr(bar, "monitor_interval", None)
    if monitor is not None:  # dynamo's progress bar starts tqdm's monitor thread: a process
        bar.monitor_interval = 0  # with a second thread cannot be confined for its job
    try:
        _replay(value, job_waiting)
    finally:
        torch.random.set_rng_state(generator)
        if monitor is not None:
            bar.monitor_interval = monitor


def _progress_bar() -> Any:
    """The tqdm class dynamo's step logger uses (``torch.hub``'s), if tqdm is installed."""
    import torch.hub
    return getattr(torch.hub, "tqdm", None)


def _replay(value: dict[str, Any], job_waiting: Any) -> None:
    graphs = value.get("graphs")
    for graph in graphs[:MAX_GRAPHS] if isinstance(graphs, list) else []:
        if job_waiting():
            return
        tier = graph.get("tier") if isinstance(graph, dict) else None
        if tier in (EXPORT, COMPILE):
            try:
                _run(tier, graph.get("nodes"))
            except Exception:
                continue
    if not job_waiting():
        code_caches.warm(value.get("code"))


def _run(tier: str, nodes: Any) -> None:
    import torch
    module, inputs = graph_data.rebuild(nodes, zeroed=tier == COMPILE)
    if tier == EXPORT:
        torch.export.export(module, inputs)
    else:
        import torch._dynamo
        torch._dynamo.explain(module)(*inputs)
