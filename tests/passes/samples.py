"""The sample file of FX passes that the CLI, server and editor tests share (the VS Code
end-to-end test opens the same file): a `Net` and two passes, `negate_after_relu` (FX005
under `inserting_before`) and `relu_to_gelu` (clean, changes the outputs)."""

from __future__ import annotations

from pathlib import Path

SAMPLE_PATH = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "e2e" / "passes.py"
PASSES = SAMPLE_PATH.read_text(encoding="utf-8")
#: the sample's imports and its `Net` (a Linear and a relu), for files of other passes
NET_HEADER = PASSES[: PASSES.index("def negate_after_relu")]
