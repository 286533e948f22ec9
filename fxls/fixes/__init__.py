"""Quick fixes: each turns one diagnostic into a source edit (a graph rewrite written back).

A fix is computed from the source text and the diagnostic alone (its span and ``data``),
so the server never re-traces to *propose* one; it re-traces to *verify* one
(``fxls.fixes.verify``) before offering it.
"""

from fxls.fixes.base import Fix, TextEdit, apply_edits
from fxls.fixes.registry import fixes_for

__all__ = ["Fix", "TextEdit", "apply_edits", "fixes_for"]
