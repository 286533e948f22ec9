"""The graph page's script: ``graph.js``, the graph view of the VS Code extension
(``editors/vscode/src/graphview``) bundled with its layout library (dagre) into one file.

It is built by ``cd editors/vscode && npm run build:page`` and committed, so that
``fxls graph --format html`` works from a fresh clone or a wheel without Node;
``tests/graph_view/test_graph_page.py`` checks that it is up to date with its sources."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def graph_script() -> str:
    """The bundled graph view (JavaScript, no imports, no network)."""
    return resources.files(__package__).joinpath("graph.js").read_text(encoding="utf-8")
