"""What torch itself says of the class ``Net`` of each file given, in a plain process: whether
``torch.export.export`` takes it, the graph breaks ``torch._dynamo.explain`` reports (their
types) and its eager outputs on the ``# fxls: args`` inputs (the same weights in every file).
Run as ``python fixed_reference.py FILE...``; prints JSON keyed by the file's name."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import torch
import torch._dynamo
from torch.utils._pytree import tree_leaves


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answer(path: Path) -> dict:
    args = re.search(r"# fxls: args (.*)", path.read_text(encoding="utf-8"))
    assert args is not None, path
    torch.manual_seed(0)
    net = _module(path).Net()
    inputs = eval(args.group(1), {"torch": torch})
    with torch.no_grad():
        outputs = [float(leaf.double().sum()) for leaf in tree_leaves(net(*inputs))]
    try:
        torch.export.export(net, inputs)
        export_error = None
    except Exception as error:
        export_error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    torch._dynamo.reset()
    explained = torch._dynamo.explain(net)(*inputs)
    breaks = [reason.reason.strip().splitlines()[0] for reason in explained.break_reasons]
    return {"export_error": export_error, "breaks": breaks, "outputs": outputs}


if __name__ == "__main__":
    print(json.dumps({Path(name).name: _answer(Path(name)) for name in sys.argv[1:]}))
