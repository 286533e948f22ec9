"""Soak `fxls serve`: many saves, each followed by a hover, from a real LSP client over stdio.

    .venv/bin/python benchmarks/soak_server.py [--saves 1000] [--sample-every 100]

Checks, and prints as a markdown table:
- resident memory of the server and of its worker processes, sampled every N saves: flat
  (the last sample within ``--rss-slack-mb`` of the one after warm-up);
- no stale diagnostics: the versions published for the document never go back (a report of
  an older text never replaces a newer one), and the last publish is of the last save;
- every hover is answered;
- no leaked processes: after shutdown and exit, no process the server started is left.
Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

TEMPLATE = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, {width})

    def forward(self, x):
        h = self.fc(x)
{body}        return h
"""
GATED_BODY = "        if h.sum() > 0:\n            h = h.relu()\n"
CLEAN_BODY = "        h = h.relu()\n"


def source(save: int) -> str:
    return TEMPLATE.format(width=4 + save % 7, body=GATED_BODY if save % 2 else CLEAN_BODY)


def descendants(pid: int, depth: int = 1 << 30) -> set[int]:
    """Every live process below ``pid`` (from /proc), ``depth`` levels down at most."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found: set[int] = set()
    level = [pid]
    for _ in range(depth):
        level = [c for parent in level for c in children.get(parent, []) if c not in found]
        if not level:
            break
        found.update(level)
    return found


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def soak(saves: int, sample_every: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="fxls-soak-"))
    path = folder / "gate.py"
    uri = path.as_uri()
    client = LanguageClient("soak", "1")
    published: list[int] = []
    done: set[int] = set()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_publish(params: types.PublishDiagnosticsParams) -> None:
        if params.uri == uri and params.version is not None:
            published.append(params.version)

    @client.feature("fxls/analysisDone")
    def on_done(params: Any) -> None:
        version = params["version"] if isinstance(params, dict) else params.version
        done.add(version)

    await client.start_io(sys.executable, "-m", "fxls", "serve")
    server_pid = client._server.pid  # type: ignore[union-attr]
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=folder.as_uri(),
        initialization_options={"fxls": {"trace": {"timeout": 60}}}))
    client.initialized(types.InitializedParams())
    text = source(0)
    path.write_text(text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, text)))

    samples: list[tuple[int, float, float, int]] = []
    hovers_answered = 0
    started = time.perf_counter()
    for save in range(1, saves + 1):
        version = save + 1
        text = source(save)
        path.write_text(text)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text)]))
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), types.Position(10, 14))), 120)
        hovers_answered += hover is not None and "Linear" in hover.contents.value
        if save % sample_every == 0 or save == saves:
            # the worker parent(s): its job children come and go, and share its pages
            workers = descendants(server_pid, depth=1)
            samples.append((save, rss_mb(server_pid), sum(rss_mb(p) for p in workers),
                            len(descendants(server_pid))))
    last = saves + 1
    deadline = time.monotonic() + 120
    while last not in done and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - started
    started_processes = descendants(server_pid)
    await client.shutdown_async(None)
    client.exit(None)
    await asyncio.sleep(3)
    await client.stop()
    leaked = sorted(p for p in started_processes | {server_pid} if alive(p))

    went_back = sum(1 for a, b in itertools.pairwise(published) if b < a)
    return {
        "saves": saves, "seconds": elapsed, "hovers_answered": hovers_answered,
        "publishes": len(published), "versions_went_back": went_back,
        "last_published": published[-1] if published else None, "last_version": last,
        "samples": samples, "leaked": leaked,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=1000)
    parser.add_argument("--sample-every", type=int, default=100)
    parser.add_argument("--rss-slack-mb", type=float, default=30.0,
                        help="allowed growth of each RSS from the first sample to the last")
    args = parser.parse_args()
    result = asyncio.run(soak(args.saves, args.sample_every))
    samples = result["samples"]
    print(f"{result['saves']} saves with a hover each in {result['seconds']:.0f} s\n")
    print("| after save | server RSS (MB) | worker parent RSS (MB) | processes below the server |")
    print("|---:|---:|---:|---:|")
    for save, server, worker, count in samples:
        print(f"| {save} | {server:.0f} | {worker:.0f} | {count} |")
    first, last = samples[0], samples[-1]
    checks = {
        "server RSS flat": last[1] - first[1] <= args.rss_slack_mb,
        "worker RSS flat": last[2] - first[2] <= args.rss_slack_mb,
        "every hover answered": result["hovers_answered"] == result["saves"],
        "no version published after a newer one": result["versions_went_back"] == 0,
        "last publish is the last save": result["last_published"] == result["last_version"],
        "no leaked processes": not result["leaked"],
    }
    print()
    for name, ok in checks.items():
        print(f"- {'ok' if ok else 'FAILED'}: {name}")
    print(f"\n{result['publishes']} publishes; leaked: {result['leaked'] or 'none'}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
