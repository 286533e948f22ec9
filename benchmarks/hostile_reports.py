"""What a model file that attacks its own report costs (issue 20), measured end to end.

    .venv/bin/python benchmarks/hostile_reports.py [cli] [server] [frame] [imports]

- ``cli``: ``fxls check --format json`` of a folder holding one attack file and one good
  file (``tests/security/hostile_reports.py``): exit code, seconds, peak RSS of the CLI, JSON size,
  whether the good file's FX001 survived, what the attack file got.
- ``server``: a raw LSP client opens the attack file: seconds until ``fxls/analysisDone``,
  publishes for that document, a hover's latency, the server's RSS.
- ``frame``: a job announcing a 1 TB result frame and feeding it 1 GB: the worker's peak RSS
  (VmHWM) before and after, and the job's outcome.
- ``imports``: a job whose ``imports`` frames name 3,000 modules: how many torch modules the
  worker holds before and after (seen from a later job's fork).
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.security import hostile_reports as hostile  # noqa: E402

ATTACKS = ("FORGED_TO_DICT", "BAD_TYPES", "OUT_OF_RANGE", "MANY_DIAGNOSTICS",
           "OVERSIZED_FRAME", "PARTIAL_FLOOD", "FORGED_IMPORTS")


def _folder(attack: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=f"fxls-{attack.lower()}-"))
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 60\n", encoding="utf-8")
    (folder / "attack.py").write_text(getattr(hostile, attack), encoding="utf-8")
    (folder / "good.py").write_text(hostile.GOOD, encoding="utf-8")
    return folder


def cli(attack: str) -> None:
    folder = _folder(attack)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "import resource, sys; from fxls.cli import main\n"
         "try:\n    code = main()\nexcept SystemExit as e:\n    code = e.code\n"
         "sys.stderr.write('\\nmaxrss %d\\n' % resource.getrusage(resource.RUSAGE_SELF)"
         ".ru_maxrss)\nsys.exit(code)", "check", "--no-cache", "--format", "json", "."],
        capture_output=True, text=True, cwd=folder, timeout=600)
    seconds = time.monotonic() - started
    maxrss = done.stderr.rsplit("maxrss ", 1)[-1].strip()
    try:
        files = {f["path"]: f["diagnostics"] for f in json.loads(done.stdout)["files"]}
    except ValueError:
        files = {}
    good = [(d["code"], d["range"]["start"]["line"]) for d in files.get("./good.py", [])]
    got = files.get("./attack.py")
    summary = ("no output" if got is None else f"{len(got)} diagnostics, e.g. " + "; ".join(
        f"{d['code']} line {d['range']['start']['line'] + 1}: {d['message'][:70]}"
        for d in sorted(got, key=lambda d: d["code"] != "FX102")[:2]))
    traceback = "Traceback" in done.stderr
    print(f"cli {attack}: exit {done.returncode}, {seconds:.1f} s, CLI max RSS "
          f"{int(maxrss) // 1024 if maxrss.isdigit() else '?'} MB, JSON {len(done.stdout):,} "
          f"bytes, good.py {good}, traceback on stderr: {traceback}; attack.py: {summary}")


def server(attack: str) -> None:
    from tests.lsp.raw_lsp import RawServer, frame, notification, request

    folder = _folder(attack)
    log = folder / "server.log"
    lsp = RawServer(log, cwd=folder)
    try:
        lsp.initialize(folder, {"fxls": {"trace": {"timeout": 60}}})
        path = folder / "attack.py"
        text = path.read_text()
        uri = path.as_uri()
        started = time.monotonic()
        lsp.send(frame(notification("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})))
        done = lsp.wait_for(lambda m: m.get("method") == "fxls/analysisDone"
                            and m["params"]["uri"] == uri, 600)
        seconds = time.monotonic() - started
        publishes = [m["params"] for m in lsp.notifications("textDocument/publishDiagnostics")
                     if m["params"]["uri"] == uri]
        started = time.monotonic()
        lsp.send(frame(request("hover", "textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": 2, "character": 1}})))
        hover = lsp.response("hover", 600)
        hover_s = time.monotonic() - started
        rss = _rss_mb(lsp.process.pid)
        last = publishes[-1]["diagnostics"] if publishes else []
        shown = "; ".join(f"{d['code']} line {d['range']['start']['line'] + 1}: "
                          f"{d['message'][:70]}" for d in last if d["code"] == "FX102")
        print(f"server {attack}: analysisDone {'yes' if done else 'NO'} after {seconds:.1f} s, "
              f"{len(publishes)} publishes, last has {len(last)} diagnostics ({shown}), hover "
              f"{'answered' if hover else 'NOT answered'} in {hover_s:.2f} s, server RSS "
              f"{rss} MB, tracebacks in its stderr: {log.read_text().count('Traceback')}")
    finally:
        lsp.close()


def _rss_mb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return -1


async def _worker_run(attack: str, after: Any = None) -> None:
    from fxls.analysis_runs.request import LEARN_IMPORTS, WARM_IMPORTS, AnalysisRequest
    from fxls.analysis_runs.runs import run_analysis
    from fxls.project.setting_groups import JobLimits, ProjectLayout
    from fxls.project.settings import Settings
    from fxls.worker.client import WorkerClient

    folder = _folder(attack)
    client = WorkerClient(sys.executable, warm_imports=WARM_IMPORTS,
                          learn_imports=LEARN_IMPORTS, sandbox=True)
    await client.start()
    try:
        assert client.pid is not None
        before_count = await _torch_modules(client)
        before = _rss_mb(client.pid, "VmHWM")
        source = getattr(hostile, attack)
        request = AnalysisRequest(str(folder / "attack.py"), source,
                                  Settings(project=ProjectLayout(root=str(folder)),
                                           limits=JobLimits(timeout=120)))
        started = time.monotonic()
        report = await run_analysis(client, request)
        seconds = time.monotonic() - started
        assert report is not None
        fx102 = [d for d in report.diagnostics if d.code == "FX102"]
        await asyncio.sleep(3)  # the worker learns imports after the job
        after_count = await _torch_modules(client)
        print(f"worker {attack}: report after {seconds:.1f} s; worker peak RSS "
              f"{before} -> {_rss_mb(client.pid, 'VmHWM')} MB; torch modules in the worker "
              f"{before_count} -> {after_count}; FX102: "
              f"{[(d.span.line, d.message[:90]) for d in fx102]}")
    finally:
        await client.close()


async def _torch_modules(client: Any) -> int:
    result = await client.run("tests.security.hostile_reports:torch_modules", {}, timeout=60)
    return int(result.value) if isinstance(result.value, int) else -1


def main() -> None:
    modes = sys.argv[1:] or ["cli", "server", "frame", "imports"]
    resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
    if "cli" in modes:
        for attack in ATTACKS:
            cli(attack)
    if "server" in modes:
        for attack in ("FORGED_TO_DICT", "BAD_TYPES", "MANY_DIAGNOSTICS", "PARTIAL_FLOOD"):
            server(attack)
    if "frame" in modes:
        asyncio.run(_worker_run("OVERSIZED_FRAME"))
    if "imports" in modes:
        asyncio.run(_worker_run("FORGED_IMPORTS"))


if __name__ == "__main__":
    main()
