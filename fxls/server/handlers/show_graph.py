"""``fxls.showGraph [uri, name, format?, target?]``: a module's traced graph (or the graph
``export``/``compile`` made of it), or a pass's before/after view, rendered from the
document's report."""

from __future__ import annotations

from typing import Any

from fxls.graph_view.module_graph import RENDERERS, render_module
from fxls.graph_view.pass_view import PASS_FORMAT, find_pass, pass_view
from fxls.graph_view.target_graph import TITLES, render_target, target_view
from fxls.output.pass_graph import graphs_of
from fxls.output.pass_page import pass_document, render_pass_page
from fxls.report import FileReport, PassReport
from fxls.server.language_server import FxlsServer

SHOW_GRAPH = "fxls.showGraph"


def show_graph(ls: FxlsServer, *args: Any) -> dict[str, Any]:
    """``[uri, name, format?, target?]`` -> ``{"name", "status", "format", "text", "graphs"}``;
    with a ``target`` (``export``, ``compile``) the graph that tier made of the module.
    ``graphs`` names the targets that made a graph of it (the editor's graph view offers a
    switch to each).

    ``name`` is a module's class name, or a pass's name: a pass (or the format ``pass``)
    gives its before/after view (``pass_view.pass_view``: ``text`` is a diff per graph,
    ``runs`` the details, ``document`` the graphs before and after it as the graph view
    draws them, ``output.pass_page.pass_document``); a pass with the format ``html`` gives
    the graph view's before/after page."""
    if not isinstance(args, list | tuple) or len(args) < 2:
        raise ValueError("fxls.showGraph expects [uri, name, format?]")
    uri, name = str(args[0]), str(args[1])
    fmt = str(args[2]) if len(args) > 2 and args[2] else "code"
    if fmt not in RENDERERS and fmt != PASS_FORMAT:
        formats = ", ".join([*RENDERERS, PASS_FORMAT])
        raise ValueError(f"unknown graph format {fmt!r}; one of {formats}")
    document = ls.session.documents.get(uri)
    snapshot = document.snapshot if document is not None else None
    if snapshot is None:
        raise ValueError(f"{uri} has not been traced yet: open or save it first")
    report = snapshot.report
    module = next((m for m in report.modules if m.name == name), None)
    if module is None or fmt == PASS_FORMAT:
        found = find_pass(report.passes, name)
        if found is None:
            raise ValueError(f"no {'pass' if fmt == PASS_FORMAT else 'module or pass'} "
                             f"{name} in {uri}")
        return _pass_answer(found, report, fmt)
    target = str(args[3]) if len(args) > 3 and args[3] else None
    graphs = [made for made in TITLES if target_view(module, made) is not None]
    if target is not None:  # the graph export or compile made of it, in place of the FX graph
        if target not in TITLES:
            raise ValueError(f"unknown target {target!r}; one of {', '.join(TITLES)}")
        text = render_target(module, fmt, report, target)
        if text is None:
            raise ValueError(f"{module.name}: {target} "
                             f"{module.targets.get(target, 'not targeted')}, no graph to show")
        return {"name": module.name, "status": module.status, "format": fmt,
                "target": target, "text": text, "graphs": graphs}
    return {
        "name": module.name,
        "status": module.status,
        "format": fmt,
        "text": render_module(module, fmt, report),
        "graphs": graphs,
    }


def _pass_answer(found: PassReport, report: FileReport, fmt: str) -> dict[str, Any]:
    graphs = graphs_of(report)
    if fmt == "html":  # the graph view's before/after page (Neovim opens it)
        return {"name": found.name, "status": "problem" if found.has_problem else "ok",
                "format": "html", "text": render_pass_page(found, graphs, report.diagnostics)}
    # the diff as text and the runs (Neovim's diff buffer), and the graphs before and after
    # the pass for the graph view (VS Code's webview)
    return {**pass_view(found), "document": pass_document(found, graphs, report.diagnostics)}
