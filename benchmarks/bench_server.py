"""`fxls serve` latency and memory, measured from a real LSP client over stdio.

    .venv/bin/python benchmarks/bench_server.py [--saves N] [--markdown]

For models of about 50, 500 and 5,000 nodes, saves 0.3 s apart: save -> first
publishDiagnostics of that version (tracing's diagnostics; median, p95) and save -> the
complete report (``fxls/analysisDone``) with a warm worker; hover latency (median, p95);
resident memory of the server process and of the worker processes after the run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from fxls.worker.procfs import child_pids, pss_mb, rss_mb


def model_source(blocks: int) -> str:
    body = "\n".join(f"        x = self.blocks[{i}](x) + x" for i in range(blocks))
    return (
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.a = nn.Linear(16, 16)\n        self.n = nn.LayerNorm(16)\n\n"
        "    def forward(self, x):\n        h = self.n(self.a(x))\n"
        "        return h.relu() * h.sigmoid() + h.tanh()\n\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.inp = nn.Linear(8, 16)\n"
        f"        self.blocks = nn.ModuleList(Block() for _ in range({blocks}))\n\n"
        f"    def forward(self, x):\n        x = self.inp(x)\n{body}\n        return x\n"
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(blocks: int, saves: int, soak: int = 0) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp())
    path = folder / "model.py"
    text = model_source(blocks)
    path.write_text(text)
    uri = path.as_uri()
    client = LanguageClient("bench", "1")
    events: asyncio.Queue[tuple[str, str, int, float]] = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        events.put_nowait(("publish", params.uri, params.version or 0, time.perf_counter()))

    @client.feature("fxls/analysisDone")
    def on_done(params: Any) -> None:
        events.put_nowait(("done", params.uri, params.version, time.perf_counter()))

    await client.start_io(sys.executable, "-m", "fxls", "serve")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=folder.as_uri(),
        initialization_options={"fxls": {"trace": {"timeout": 60}}}))
    client.initialized(types.InitializedParams())

    async def wait_for(version: int) -> tuple[float, float]:
        """When the first diagnostics of ``version`` and its complete report arrived."""
        first = None
        while True:
            kind, event_uri, event_version, at = await events.get()
            if event_uri != uri or event_version != version:
                continue
            if kind == "publish" and first is None:
                first = at
            if kind == "done":
                return first if first is not None else at, at

    async def save(version: int, pause: float = 0.3) -> tuple[float, float]:
        await asyncio.sleep(pause)  # saves are apart in an editor
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri)))
        first, done = await wait_for(version)
        return (first - start) * 1000, (done - start) * 1000

    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await wait_for(1)
    latencies, complete = [], []
    for version in range(2, saves + 2):
        first_ms, done_ms = await save(version)
        latencies.append(first_ms)
        complete.append(done_ms)
    line = text.splitlines().index("        x = self.blocks[0](x) + x")
    hovers = []
    for _ in range(50):
        start = time.perf_counter()
        await client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(line=line, character=14)))
        hovers.append((time.perf_counter() - start) * 1000)
    server_pid = client._server.pid  # type: ignore[union-attr]
    soak_growth = 0.0
    if soak:
        before = rss_mb(server_pid)
        for version in range(saves + 2, saves + 2 + soak):
            await save(version, pause=0)
        soak_growth = rss_mb(server_pid) - before
    workers = child_pids(server_pid)
    worker_mb = sum(pss_mb(p) for p in workers) + sum(
        pss_mb(c) for p in workers for c in child_pids(p))
    result = {
        "save_median": statistics.median(latencies),
        "save_p95": percentile(latencies, 0.95),
        "complete_median": statistics.median(complete),
        "hover_median": statistics.median(hovers),
        "hover_p95": percentile(hovers, 0.95),
        "server_mb": rss_mb(server_pid),
        "worker_mb": worker_mb,
        "soak_growth_mb": soak_growth,
    }
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--soak", type=int, default=0,
                        help="extra saves of the small model, to watch server memory")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    rows = []
    for label, blocks in (("~50 nodes", 5), ("~500 nodes", 55), ("~5,000 nodes", 550)):
        r = asyncio.run(measure(blocks, args.saves, args.soak if blocks == 5 else 0))
        rows.append((label, r))
    if args.markdown:
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}; "
              f"{args.saves} saves, 50 hovers per model.\n")
        print("| model | save->diagnostics median (ms) | p95 (ms) | save->complete report "
              "median (ms) | hover median (ms) | hover p95 (ms) | server RSS (MB) | "
              "worker processes PSS (MB) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for label, r in rows:
            print(f"| {label} | {r['save_median']:.0f} | {r['save_p95']:.0f} | "
                  f"{r['complete_median']:.0f} | "
                  f"{r['hover_median']:.1f} | {r['hover_p95']:.1f} | {r['server_mb']:.0f} | "
                  f"{r['worker_mb']:.0f} |")
        if args.soak:
            print(f"\nServer RSS growth over {args.soak} further saves of the ~50-node model: "
                  f"{rows[0][1]['soak_growth_mb']:+.1f} MB.")
        return
    for label, r in rows:
        print(label, {k: round(v, 1) for k, v in r.items()})


if __name__ == "__main__":
    main()
