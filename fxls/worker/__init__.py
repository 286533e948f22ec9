"""Run user code jobs isolated from the caller, each in a fresh fork of a warm process.

``client.WorkerClient`` (asyncio, used by the caller) spawns ``python -m fxls.worker``
(``worker_loop.Worker``, the warm parent) which forks one child per job (``child``).
The worker modules use only the standard library: they run in the user's interpreter.
"""
