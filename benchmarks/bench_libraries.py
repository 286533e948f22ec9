"""Saves in real projects: user files built from timm, torchvision and transformers models.

    .venv/bin/python benchmarks/bench_libraries.py [--saves N] [--markdown] [--only NAME]

Needs the model zoo (``scripts/install_model_zoo.py``; its ``site`` folder goes on
PYTHONPATH for this process and for the server). For each user file, through a real LSP
client over stdio (``fxls serve``):

- cold open: a server started for this file alone, the document opened right after
  ``initialized`` -> its first ``publishDiagnostics`` and its complete report
  (``fxls/analysisDone``);
- saves: after ``--settle`` seconds (a user reading the first diagnostics; the worker
  learns the file's libraries meanwhile), N saves 0.5 s apart -> first diagnostics and
  complete report (median);

and, in this process with the libraries already imported (the floor a warm process needs):
exec of the file + construction of its model on the meta device + ``torch.fx.symbolic_trace``
(median of N runs after one warm-up run), and the same work in a new ``python`` process
(the cold open's floor: interpreter start and every import); where torch.fx stops
(transformers' BERT, at a slice of a traced size) the floor ends there, as a user's trace
would. Issue 23's goal:
save -> first diagnostics at most 2x the floor + 60 ms; cold open under 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ZOO_SITE = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser() / "site"

USER_FILES: dict[str, str] = {
    "timm ViT-S": '''\
import timm
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.backbone = timm.create_model("vit_small_patch16_224", pretrained=False,
                                          num_classes=0)
        self.head = nn.Linear(self.backbone.num_features, classes)

    def forward(self, images):  # fxls: args (torch.randn(1, 3, 224, 224),)
        features = self.backbone(images)
        return self.head(features).softmax(-1)
''',
    "torchvision ResNet-50": '''\
import torch
from torch import nn
from torchvision.models import resnet50


class Classifier(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.backbone = resnet50(weights=None)
        self.backbone.fc = nn.Identity()
        self.head = nn.Linear(2048, classes)

    def forward(self, images):  # fxls: args (torch.randn(1, 3, 224, 224),)
        features = self.backbone(images)
        return self.head(features).softmax(-1)
''',
    "transformers BERT (2 layers)": '''\
import torch
from torch import nn
from transformers import BertConfig, BertModel


class Classifier(nn.Module):
    def __init__(self, classes: int = 3):
        super().__init__()
        config = BertConfig(num_hidden_layers=2, hidden_size=128, num_attention_heads=2,
                            intermediate_size=256)
        self.encoder = BertModel(config, add_pooling_layer=False)
        self.head = nn.Linear(config.hidden_size, classes)

    def forward(self, input_ids):  # fxls: args (torch.randint(0, 1000, (2, 16)),)
        hidden = self.encoder(input_ids).last_hidden_state
        return self.head(hidden[:, 0])
''',
}


def in_process_floor(source: str, path: Path, runs: int) -> float:
    """exec + meta construction + torch.fx trace, warm, in this process (ms, median)."""
    import torch
    import torch.fx

    def once() -> float:
        start = time.perf_counter()
        namespace: dict[str, Any] = {"__name__": "bench_user_file", "__file__": str(path)}
        exec(compile(source, str(path), "exec"), namespace)
        with torch.device("meta"):
            model = namespace["Classifier"]()
        try:
            torch.fx.symbolic_trace(model)
        except Exception:  # a trace that stops (BERT: at a slice) ends there
            pass
        return (time.perf_counter() - start) * 1000

    once()
    return statistics.median(once() for _ in range(runs))


_COLD_FLOOR = """
import sys, torch, torch.fx
path = sys.argv[1]
namespace = {"__name__": "bench_user_file", "__file__": path}
exec(compile(open(path).read(), path, "exec"), namespace)
with torch.device("meta"):
    model = namespace["Classifier"]()
try:
    torch.fx.symbolic_trace(model)
except Exception:
    pass
"""


def cold_floor(path: Path) -> float:
    """A new ``python`` doing the floor's work: start, imports, construction, trace (ms)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _COLD_FLOOR, str(path)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


class Session:
    """One ``fxls serve`` with one document, and when its reports arrive."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text, self.uri = path, text, path.as_uri()
        self.client = LanguageClient("bench", "1")
        self.events: asyncio.Queue[tuple[str, str, int, float]] = asyncio.Queue()
        self.messages: list[str] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            self.messages = [d.message for d in params.diagnostics]
            self.events.put_nowait(("publish", params.uri, params.version or 0,
                                    time.perf_counter()))

        @self.client.feature("fxls/analysisDone")
        def on_done(params: Any) -> None:
            self.events.put_nowait(("done", params.uri, params.version, time.perf_counter()))

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "fxls", "serve")
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=self.path.parent.as_uri(),
            initialization_options={"fxls": {"trace": {"timeout": 120}}}))
        self.client.initialized(types.InitializedParams())

    async def wait_for(self, version: int) -> tuple[float, float]:
        first = None
        while True:
            kind, uri, event_version, at = await asyncio.wait_for(self.events.get(), 300)
            if uri != self.uri or event_version != version:
                continue
            if kind == "publish" and first is None:
                first = at
            if kind == "done":
                return first if first is not None else at, at

    async def open(self) -> tuple[float, float]:
        start = time.perf_counter()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=self.uri, language_id="python", version=1,
                                   text=self.text)))
        first, done = await self.wait_for(1)
        return (first - start) * 1000, (done - start) * 1000

    async def save(self, version: int) -> tuple[float, float]:
        start = time.perf_counter()
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(version=version, uri=self.uri),
            # a new text each time: an unchanged save is answered from the last report
            # (server/analysed_texts.py) and would measure nothing of the analysis
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=f"{self.text}\n# save {version}\n")]))
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(self.uri)))
        first, done = await self.wait_for(version)
        return (first - start) * 1000, (done - start) * 1000

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def measure(name: str, source: str, saves: int, settle: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="fxls-bench-lib-"))
    path = folder / "classifier.py"
    path.write_text(source)
    session = Session(path, source)
    await session.start()
    cold_first, cold_done = await session.open()
    await asyncio.sleep(settle)
    firsts, dones = [], []
    for version in range(2, saves + 2):
        await asyncio.sleep(0.5)
        first, done = await session.save(version)
        firsts.append(first)
        dones.append(done)
    messages = session.messages
    await session.stop()
    floor = in_process_floor(source, path, runs=max(3, saves))
    cold = cold_floor(path)
    return {"name": name, "cold_floor": cold, "cold_first": cold_first, "cold_done": cold_done,
            "save_first": statistics.median(firsts), "save_done": statistics.median(dones),
            "floor": floor, "messages": messages,
            "firsts": [round(first) for first in firsts], "dones": [round(done) for done in dones]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=7)
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds between the cold open and the first save")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", help="a substring of the user files' names")
    args = parser.parse_args()
    if not ZOO_SITE.is_dir():
        sys.exit(f"the model zoo is not installed in {ZOO_SITE} (scripts/install_model_zoo.py)")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ZOO_SITE), os.environ.get("PYTHONPATH")]))
    sys.path.insert(0, str(ZOO_SITE))
    rows = []
    for name, source in USER_FILES.items():
        if args.only and args.only.lower() not in name.lower():
            continue
        row = asyncio.run(measure(name, source, args.saves, args.settle))
        rows.append(row)
        if not args.markdown:
            print(row, flush=True)
    if args.markdown:
        print("| user file | save -> first diagnostics | goal (2x floor + 60) | in-process floor "
              "| save -> complete report | cold open -> first | cold open -> complete "
              "| a new `python` doing the floor's work |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in rows:
            print(f"| {row['name']} | {row['save_first']:.0f} ms | "
                  f"{2 * row['floor'] + 60:.0f} ms | {row['floor']:.0f} ms | "
                  f"{row['save_done']:.0f} ms | {row['cold_first']:.0f} ms | "
                  f"{row['cold_done']:.0f} ms | {row['cold_floor']:.0f} ms |")
        print()
        load = os.getloadavg()[0]
        print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}; medians of {args.saves} saves 0.5 s apart, "
              f"the first {args.settle:g} s after the cold open; "
              f"load average at the end {load:.1f}.")
        for row in rows:
            if row["messages"]:
                print(f"\n{row['name']}: diagnostics {row['messages']}")


if __name__ == "__main__":
    main()
