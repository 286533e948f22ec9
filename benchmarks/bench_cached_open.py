"""Opening a user file again with the result cache warm: first diagnostics from the cache vs a
cold analysis.

    .venv/bin/python benchmarks/bench_cached_open.py [--runs N] [--only NAME] [--markdown]

Needs the model zoo (``scripts/install_model_zoo.py``), as ``bench_libraries.py``, whose user
files it opens. Each open is what an editor does the next day: a new ``fxls serve`` (with a
cache folder of this run's own), the document opened right after ``initialized``; the time
is from ``didOpen`` to the first ``publishDiagnostics`` and to the complete report's
``fxls/analysisDone``:

- cold: the cache empty (the file's first open, which stores its result);
- warm (median of N): the cache holds the file's result, published before the worker
  answers (``fxls/analysisDone`` with ``cached``), then the fresh analysis' own report.

Issue 37's goal: warm first diagnostics at most 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_libraries import USER_FILES, ZOO_SITE

TIMEOUT_S = 300.0


class Opening:
    """One new ``fxls serve`` opening one document, and when its answers arrive."""

    def __init__(self, path: Path) -> None:
        self.path, self.uri = path, path.as_uri()
        self.client = LanguageClient("bench", "1")
        #: (what, at): "publish", "cached" (the cache's analysisDone), "done" (the fresh one)
        self.events: asyncio.Queue[tuple[str, float]] = asyncio.Queue()
        self.messages: list[str] = []
        #: how long the server's fingerprint and lookup took (its log line says)
        self.lookup = "?"

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_publish(params: types.PublishDiagnosticsParams) -> None:
            if params.uri == self.uri:
                self.messages = [d.message for d in params.diagnostics]
                self.events.put_nowait(("publish", time.perf_counter()))

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            if params.message.startswith(f"fxls: {self.uri}: "):
                self.lookup = params.message.rpartition(" (")[2].rstrip(")")

        @self.client.feature("fxls/analysisDone")
        def on_done(params: Any) -> None:
            cached = getattr(params, "cached", None) is True
            if params.uri == self.uri:
                self.events.put_nowait(("cached" if cached else "done", time.perf_counter()))

    async def run(self) -> dict[str, Any]:
        """ms from didOpen to the first publish, the cache's report (None: none) and the
        fresh report."""
        await self.client.start_io(sys.executable, "-m", "fxls", "serve")
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=self.path.parent.as_uri(),
            initialization_options={"fxls": {"trace": {"timeout": 120}}}))
        self.client.initialized(types.InitializedParams())
        start = time.perf_counter()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=self.uri, language_id="python", version=1,
                                   text=self.path.read_text())))
        seen: dict[str, float] = {}
        while "done" not in seen:
            what, at = await asyncio.wait_for(self.events.get(), TIMEOUT_S)
            seen.setdefault(what, (at - start) * 1000)
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()
        return {"first": seen.get("publish"), "cached": seen.get("cached"),
                "done": seen["done"], "lookup": self.lookup}


async def _stored(cache: Path) -> None:
    """Until the cold open's result is in the cache (stored after its report)."""
    deadline = time.perf_counter() + TIMEOUT_S
    while not any(cache.rglob("*.report")):
        if time.perf_counter() > deadline:
            sys.exit("the cold open's result was never stored")
        await asyncio.sleep(0.05)


async def measure(name: str, source: str, runs: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="fxls-bench-cached-"))
    cache = folder / "cache"
    os.environ["FXLS_CACHE_DIR"] = str(cache)
    path = folder / "user" / "classifier.py"
    path.parent.mkdir()
    path.write_text(source)
    try:
        cold = await Opening(path).run()
        await _stored(cache)
        warm = [await Opening(path).run() for _ in range(runs)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if any(run["cached"] is None for run in warm):
        sys.exit(f"{name}: a warm open was not answered from the cache: {warm}")
    return {"name": name, "cold_first": cold["first"], "cold_done": cold["done"],
            "warm_first": statistics.median(run["first"] for run in warm),
            "warm_done": statistics.median(run["done"] for run in warm),
            "warm_firsts": [round(run["first"]) for run in warm],
            "warm_lookups": [run["lookup"] for run in warm]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="warm opens (median)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", default="BERT", help="a substring of the user files' names")
    args = parser.parse_args()
    if not ZOO_SITE.is_dir():
        sys.exit(f"the model zoo is not installed in {ZOO_SITE} (scripts/install_model_zoo.py)")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(ZOO_SITE), os.environ.get("PYTHONPATH")]))
    os.environ.pop("FXLS_NO_CACHE", None)
    rows = []
    for name, source in USER_FILES.items():
        if args.only.lower() not in name.lower():
            continue
        row = asyncio.run(measure(name, source, args.runs))
        rows.append(row)
        if not args.markdown:
            print(row, flush=True)
    if args.markdown:
        print("| user file | warm open -> first diagnostics (cache) | warm open -> complete "
              "report | cold open -> first diagnostics | cold open -> complete report |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for row in rows:
            print(f"| {row['name']} | {row['warm_first']:.0f} ms | {row['warm_done']:.0f} ms "
                  f"| {row['cold_first']:.0f} ms | {row['cold_done']:.0f} ms |")
        print()
        print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}; warm: median of {args.runs} opens, each in a new "
              f"server; load average at the end {os.getloadavg()[0]:.1f}.")


if __name__ == "__main__":
    main()
