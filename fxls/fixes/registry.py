"""Which fixes apply to a diagnostic: dispatch on its code, using its span and ``data``."""

from __future__ import annotations

import ast
import dataclasses

from fxls.fixes import (
    assumptions,
    branches,
    buffers,
    conversions,
    graph_breaks,
    passes,
    pragmas,
    statements,
)
from fxls.fixes.base import Fix
from fxls.fixes.source_map import Located, locate
from fxls.report import Diagnostic


def fixes_for(source: str, diagnostic: Diagnostic) -> list[Fix]:
    """Candidate fixes for ``diagnostic`` in ``source`` (unverified)."""
    located = locate(source, diagnostic.span)
    if located is None:
        return []
    code = diagnostic.code
    fixes: list[Fix] = []
    data = diagnostic.data
    pass_name = data.get("pass")
    if isinstance(pass_name, str) and pass_name:
        return _pass_fixes(located, diagnostic, pass_name)
    if code == "FX010":
        fixes += statements.remove_dead_computation(located)
    elif code == "FX011":
        fixes += statements.out_of_place(located)
    elif code == "FX012":
        fixes += buffers.register_buffer(located)
    elif code == "FX013":
        fixes += statements.remove_trace_time_call(located)
    elif code == "FX020":
        fixes += buffers.apply_rewrite(located, data.get("replacement"), data.get("rule"))
    elif code == "FX101" and diagnostic.module:
        fixes += pragmas.init_stub(located, diagnostic.module)
    elif code == "FX004" and diagnostic.module and isinstance(data.get("none_default"), str):
        fixes += pragmas.make_concrete(located, diagnostic.module, [data["none_default"]], code)
    elif code in ("FX001", "FX002", "FX003"):
        if code == "FX001":
            fixes += statements.assert_to_torch_assert(located)
            fixes += statements.branch_to_where(located)
        if code == "FX003":
            fixes += conversions.keep_symbolic(located)
        fixes += _structural_fixes(located, diagnostic)
    elif code == "FX201":  # verified by exporting the edited text (``Fix.tier``)
        located = _at_condition(located)
        fixes += assumptions.assume(located, diagnostic)
        fixes += branches.rewrite_branch(located, diagnostic, "export")
    elif code == "FX301":  # verified by dynamo's run on the edited text
        fixes += graph_breaks.fix_break(_at_condition(located), diagnostic)
    return fixes


def _at_condition(located: Located) -> Located:
    """torch places a jump of ``a if c else b`` at the whole expression: its condition."""
    if isinstance(located.expr, ast.IfExp):
        return dataclasses.replace(located, expr=located.expr.test)
    return located


def _pass_fixes(located: Located, diagnostic: Diagnostic, pass_name: str) -> list[Fix]:
    """Problems in FX pass code (``data["pass"]``): fixes of the pass, not of a model."""
    code, data, line = diagnostic.code, diagnostic.data, diagnostic.span.line
    if code == "FX005" and isinstance(data.get("inserting_before"), str):
        return passes.insert_after_anchor(located, pass_name, line)
    if code == "FX007" and isinstance(data.get("recompile"), str):
        return passes.recompile_before_return(located, data["recompile"])
    if code == "FX010":
        # the pass's line that created the node; a node it kept was made elsewhere
        removals = [] if data.get("kept") else statements.remove_dead_computation(located)
        return [*passes.eliminate_dead_code(located, pass_name, line),
                *(dataclasses.replace(fix, safe=False) for fix in removals)]
    return []


def _structural_fixes(located, diagnostic: Diagnostic) -> list[Fix]:
    """Leaf / wrap / concrete: make the tracer not look inside, or decide the branch early."""
    code = diagnostic.code
    fixes: list[Fix] = []
    opaque = diagnostic.data.get("opaque")
    if isinstance(opaque, str):  # the construct is in library code: keep that code opaque
        return pragmas.keep_library_opaque(located, opaque, code)
    where = pragmas.enclosing_definition(located, diagnostic.span.line)
    if where is not None:
        kind, name = where
        if kind == "function":
            fixes += pragmas.wrap_function(located, name, code)
        elif kind == "class" and name != diagnostic.module:
            fixes += pragmas.mark_leaf(located, name, code)
        elif kind == "class" and diagnostic.data.get("also_reached_from"):
            fixes += pragmas.mark_leaf(located, name, code)  # a submodule of other roots too
        if kind == "class" and name == diagnostic.module and code == "FX001":
            names = pragmas.condition_parameters(located)
            fixes += pragmas.make_concrete(located, name, names, code)
    return fixes
