"""What fxls draws of a graph: a module's graph as code, table, DOT, JSON or the HTML page
(``module_graph``), and an FX pass's code lens and before/after view (``pass_view``)."""
