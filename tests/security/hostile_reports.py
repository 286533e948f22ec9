"""Model files that attack the report they are analysed into (issue 20): the analysis runs
their code in its own process, so they can change fxls itself or write to the result pipe.
Shared by the CLI, server and worker tests and by ``benchmarks/hostile_reports.py``."""

from __future__ import annotations

#: a model every attack file also holds (the attack must not hide it when the report is good)
MODEL = """

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h.relu()
        return h
"""

HEAD = "import torch\nfrom torch import nn\n"

#: a file with no attack: its FX001 (line 12, 0-based 11) must survive every attack next to it
GOOD = HEAD + MODEL

#: the report replaced by garbage (the partial one too)
FORGED_TO_DICT = HEAD + """import fxls.report

fxls.report.FileReport.to_dict = lambda self, partial=None: {"garbage": 1}
""" + MODEL

#: fields of the wrong type: a number for the path, a string for a line, a list for a span
BAD_TYPES = HEAD + """import fxls.report

def _bad(self, partial=None):
    return {"path": 1, "modules": [{"name": 2, "status": "traced"}],
            "diagnostics": [{"code": "FX001", "severity": "error", "message": "x",
                             "span": {"file": __file__, "line": "1", "end_line": 1,
                                      "col": 0, "end_col": 1}}]}

fxls.report.FileReport.to_dict = _bad
""" + MODEL

#: a span far outside the document
OUT_OF_RANGE = HEAD + """import fxls.report

def _outside(self, partial=None):
    return {"path": self.path, "diagnostics": [
        {"code": "FX001", "severity": "error", "message": "outside",
         "span": {"file": __file__, "line": 5000, "end_line": 5000, "col": 0, "end_col": 3}}]}

fxls.report.FileReport.to_dict = _outside
""" + MODEL

#: 200,000 diagnostics (warnings on line 1, one error, the last one, on line 2)
MANY_DIAGNOSTICS = HEAD + """import fxls.report

COUNT = 200_000

def _many(self, partial=None):
    warning = {"code": "FX013", "severity": "warning", "message": "forged",
               "span": {"file": __file__, "line": 1, "end_line": 1, "col": 0, "end_col": 6}}
    error = {"code": "FX001", "severity": "error", "message": "the one error",
             "span": {"file": __file__, "line": 2, "end_line": 2, "col": 0, "end_col": 4}}
    return {"path": self.path, "diagnostics": [warning] * (COUNT - 1) + [error]}

fxls.report.FileReport.to_dict = _many
""" + MODEL

#: a result frame announcing 1 TB, fed ``FEED_MB`` MB, then the job goes on as usual
OVERSIZED_FRAME = HEAD + """import os
import struct
from fxls.worker import api

FEED_MB = 1024
fd = api._result_fd
os.write(fd, struct.pack("!Q", 1 << 40))
chunk = b"x" * (1 << 20)
try:
    for _ in range(FEED_MB):
        os.write(fd, chunk)
except OSError:
    pass
""" + MODEL

#: 300 partial results, each a valid report with one diagnostic (line 4)
PARTIAL_FLOOD = HEAD + """from fxls.report import Diagnostic, FileReport, Span
from fxls.worker import api

for number in range(300):
    diagnostic = Diagnostic("FX013", "warning", f"partial {number}",
                            Span(__file__, 4, 4, 0, 4))
    api.send_partial(FileReport(__file__, [], [diagnostic]).to_dict())
""" + MODEL

#: ``imports`` frames naming 3,000 modules: torch's own (real files, outside the packages
#: the worker learns from: ``fxls.analysis_runs.request.LEARN_IMPORTS``), others, nonsense
FORGED_IMPORTS = HEAD + """import os
from fxls.worker import api
from fxls.worker.protocol import encode_status

root = os.path.dirname(torch.__file__)
names = []
for folder, _, files in sorted(os.walk(root)):
    package = "torch" + folder[len(root):].replace(os.sep, ".")
    if not package.startswith(("torch._dynamo", "torch._functorch", "torch.fx.experimental")):
        names += [package + "." + f[:-3] for f in sorted(files)
                  if f.endswith(".py") and f != "__init__.py"]
names = names[:2990] + ["os", "antigravity", "this", "torch.not_there", "torch..x",
                        "torch/../x", "../etc", "torch.__main__", "x" * 500, "torch.\\n"]
os.write(api._result_fd, encode_status("imports", value=names))
# and the job's own imports frame, sent right before its result, says the same
import fxls.worker.child
fxls.worker.child._send_imports = lambda fd, loaded, packages: os.write(
    fd, encode_status("imports", value=names))
""" + MODEL


def torch_modules(params: object) -> int:
    """A job: how many torch modules its process (a fork of the worker) holds."""
    import sys

    return sum(1 for name in sys.modules if name == "torch" or name.startswith("torch."))


def send_partials(params: dict[str, int]) -> str:
    """A job: ``count`` partial results (``{"number": n}``), then its result."""
    from fxls.worker import api

    for number in range(params["count"]):
        api.send_partial({"number": number})
    return "done"


def raw_final(params: dict[str, str]) -> str:
    """A job that writes its own final frame (``body``, as given) and then returns."""
    import os

    from fxls.worker import api
    from fxls.worker.protocol import frame

    assert api._result_fd is not None
    os.write(api._result_fd, frame(params["body"].encode()))
    return "never seen"
