"""Imported first by the command line (``fxls.cli``), before anything a workspace could
shadow: ``fxls check`` and ``fxls serve`` never import the user's code (their worker's jobs
do, sandboxed), yet editors and CI start them in the workspace with its PYTHONPATH
(``PYTHONPATH=<ws>/src`` from a dev shell), whose entries come before the standard library:
a committed ``src/argparse.py`` would run here. PYTHONPATH entries inside the working
directory leave ``sys.path`` (the worker still gets them for the jobs: the client passes
the environment's PYTHONPATH on), except the folder fxls itself comes from.

What ran while the interpreter started (``sitecustomize``, a module ``site`` imports) is
out of reach of any code of fxls: only starting Python with ``-E`` or ``-I`` avoids it."""

import os
import sys


def leave_the_workspace() -> None:
    here = os.path.realpath(os.getcwd())
    own = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    named = {os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if p}
    sys.path[:] = [p for p in sys.path if not _dropped(os.path.realpath(p or os.curdir),
                                                       named, here, own)]


def _dropped(real: str, named: set[str], here: str, own: str) -> bool:
    inside = real == here or real.startswith(here.rstrip(os.sep) + os.sep)
    return inside and real in named and real != own


leave_the_workspace()
