"""The LSP handlers, one module per method or command (as ruff's server has
``api/notifications/did_change.rs``), routed by the table in ``fxls.server.routes``.

A handler is thin: it reads the session (a document's :class:`~fxls.server.session.
DocumentSnapshot`) and calls the server's roles (``scheduler``, ``publisher``,
``project_check``) and lets what it cannot do raise: the one guard that ``routes`` puts on
every route (``handler_guard.guarded``) turns a failure into a log line and the method's
empty answer.
"""
