"""Analysis of one file: source text + settings -> FileReport. Runs inside the worker."""

import os as _os

from fxcore.source import add_internal_path as _add_internal_path

# fxls's own frames (the trace-time recorder) are never "user code" in a node's stack.
_add_internal_path(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
