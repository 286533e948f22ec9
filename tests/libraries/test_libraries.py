"""The worker learns the third-party libraries jobs import (issue 23): its zygote imports
them (checking each import), so later jobs start with them loaded; the worker itself never imports
them. Jobs whose own code is such a library, or would be shadowed by one, run without it; a
library changed on disk is dropped; one whose import starts a thread is left out.

The libraries are small packages written here into a folder that looks like an installed
one (it holds a ``*.dist-info``) and is put on the worker's PYTHONPATH."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fxls.analysis_runs.request import WARM_IMPORTS, AnalysisRequest
from fxls.analysis_runs.runs import run_analysis
from fxls.project.setting_groups import JobLimits, ProjectLayout
from fxls.project.settings import Settings
from fxls.worker.client import JobResult, WorkerClient
from fxls.worker.library_learner import QUIET_S
from fxls.worker.pool import CORES, IDLE_CHILDREN
from tests import probes
from tests.worker.test_worker import JOBS, children_of

pytestmark = pytest.mark.skipif(not probes.SIBLING_FORKS,
                                reason="libraries are learned by zygotes, which need Linux")

ZOO = Path("~/.cache/fxls-model-zoo/site").expanduser()
LEARNED_WITHIN_S = 60.0


def countlib_source(version: int, marker: Path) -> str:
    """It keeps its own file open (the processes that imported it, and their forks, can be
    told from outside), and tries to write its pid to ``marker``, outside the folders of
    the processes that import it: a job, or a zygote learning it, cannot."""
    return (f"import os\nVERSION = {version}\nKEPT_OPEN = open(__file__, 'rb')\n"
            f"try:\n    with open({str(marker)!r}, 'a') as f:\n"
            f"        f.write(f'{{os.getpid()}}\\n')\n"
            "except OSError:\n    pass  # refused\n")


def make_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "countlib").mkdir(parents=True)
    (site / "countlib-1.0.dist-info").mkdir()
    (site / "countlib" / "__init__.py").write_text(countlib_source(1, tmp_path / "imported"))
    (site / "countlib" / "extra.py").write_text("EXTRA = True\n")
    (site / "threadlib").mkdir()
    (site / "threadlib" / "__init__.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n")
    return site


async def start(site: Path, env: dict[str, str] | None = None,
                **options: Any) -> WorkerClient:
    env = {**os.environ, "PYTHONPATH": str(site), **(env or {})}
    worker = WorkerClient(sys.executable, sandbox=True, learn_libraries=True, env=env,
                          **options)
    await worker.start()
    return worker


async def report(worker: WorkerClient, name: str, sources: tuple[str, ...] = (),
                 also: tuple[str, ...] = ()) -> dict[str, Any]:
    result: JobResult = await worker.run(f"{JOBS}:library_report",
                                         {"name": name, "also": list(also)}, timeout=60,
                                         sources=sources)
    assert result.status == "ok", result
    return result.value


async def until_loaded(worker: WorkerClient, name: str, **options: Any) -> dict[str, Any]:
    """Run jobs until one starts with ``name`` loaded (learning happens in the background,
    between jobs, as between an editor's saves)."""
    deadline = time.monotonic() + LEARNED_WITHIN_S
    while True:
        value = await report(worker, name, **options)
        if value["loaded"] or time.monotonic() > deadline:
            return value
        await asyncio.sleep(QUIET_S + 0.3)  # trials wait for a quiet moment


def imported_by(worker_pid: int, tmp_path: Path) -> set[int]:
    """The worker and those of its children that imported countlib or were forked from one
    that had (they have its file open)."""
    library = str(tmp_path / "site" / "countlib" / "__init__.py")
    found = set()
    for pid in [worker_pid, *children_of(worker_pid)]:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == library:
                    found.add(pid)
                    break
            except OSError:
                pass
    return found


async def test_a_learned_library_is_not_imported_again_by_later_jobs(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    worker = await start(site)
    try:
        first = await report(worker, "countlib", also=("countlib.extra",))
        assert first["loaded"] is False
        learned = await until_loaded(worker, "countlib", also=("countlib.extra",))
        assert learned["loaded"] is True and learned["also_loaded"]["countlib.extra"] is True
        for _ in range(3):  # and it stays so: no job imports it again
            assert (await report(worker, "countlib"))["loaded"] is True
        # a zygote imported it (its idle processes have it); the worker never did
        assert worker.pid is not None and imported_by(worker.pid, tmp_path)
        assert worker.pid not in imported_by(worker.pid, tmp_path)
    finally:
        await worker.close()


async def test_the_documents_own_package_and_a_library_analysed_in_place_run_fresh(
    tmp_path: Path,
) -> None:
    site = make_site(tmp_path)
    project = tmp_path / "project"
    (project / "countlib").mkdir(parents=True)
    (project / "countlib" / "__init__.py").write_text("")
    (project / "countlib" / "helper.py").write_text("WIDTH = 4\n")
    model = project / "countlib" / "model.py"
    model.write_text("import torch\nfrom torch import nn\nfrom countlib.helper import WIDTH\n\n\n"
                     "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                     "        self.fc = nn.Linear(WIDTH, 2)\n\n    def forward(self, x):\n"
                     "        if x.sum() > 0:\n            return self.fc(x)\n"
                     "        return x\n")
    worker = await start(site, warm_imports=WARM_IMPORTS)
    try:
        await report(worker, "countlib")
        assert (await until_loaded(worker, "countlib"))["loaded"] is True
        own_package = (str(model), str(project))
        assert (await report(worker, "countlib", sources=own_package))["loaded"] is False
        elsewhere = (str(tmp_path / "other" / "model.py"), str(tmp_path / "other"))
        assert (await report(worker, "countlib", sources=elsewhere))["loaded"] is True
        in_place = (str(site / "countlib" / "extra.py"), str(site))
        assert (await report(worker, "countlib", sources=in_place))["loaded"] is False
        # its folder is a project now: it is no longer imported outside a job
        assert (await report(worker, "countlib", sources=elsewhere))["loaded"] is False
        # the analysis of the document imports its own package's helper, not the library's
        request = AnalysisRequest(str(model), model.read_text(),
                                  Settings(project=ProjectLayout(root=str(project)),
                                           limits=JobLimits(timeout=60)))
        analysed = await run_analysis(worker, request)
        assert analysed is not None
        assert [(d.code, d.span.line) for d in analysed.diagnostics] == [("FX001", 12)]
    finally:
        await worker.close()


async def test_a_library_changed_on_disk_is_dropped_and_learned_again(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    worker = await start(site)
    try:
        await report(worker, "countlib")
        assert (await until_loaded(worker, "countlib"))["version"] == 1
        replacement = site / "countlib" / "__init__.py.new"  # as pip or an editor replaces it
        replacement.write_text(countlib_source(2, tmp_path / "imported"))
        replacement.replace(site / "countlib" / "__init__.py")
        after = await report(worker, "countlib")
        assert after["loaded"] is False and after["version"] == 2
        again = await until_loaded(worker, "countlib")
        assert again["loaded"] is True and again["version"] == 2
    finally:
        await worker.close()


async def test_a_library_that_starts_a_thread_at_import_is_left_out(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    worker = await start(site)
    try:
        first = await report(worker, "countlib", also=("threadlib",))
        assert first["also_loaded"] == {"countlib": False, "threadlib": False}
        learned = await until_loaded(worker, "countlib", also=("threadlib",))
        assert learned["also_loaded"] == {"countlib": True, "threadlib": False}
        await asyncio.sleep(0.5)
        assert worker.pid is not None
        # the worker, its zygotes and its idle job processes: one thread each
        for pid in [worker.pid, *children_of(worker.pid)]:
            assert len(os.listdir(f"/proc/{pid}/task")) == 1, pid
    finally:
        await worker.close()


async def test_the_client_can_name_libraries_before_any_job(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    worker = await start(site)
    try:
        assert worker.pid is not None
        before = set(children_of(worker.pid))
        await worker.warm(["countlib", "os", "../x", "threadlib"])
        # done when a zygote that imported it replaced the first one and forked idle processes
        deadline = time.monotonic() + LEARNED_WITHIN_S
        while not _replaced(before, worker.pid, tmp_path) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert (await report(worker, "countlib"))["loaded"] is True
    finally:
        await worker.close()


def _replaced(before: set[int], worker_pid: int, tmp_path: Path) -> bool:
    now = set(children_of(worker_pid))
    return (not now & before and bool(now & imported_by(worker_pid, tmp_path))
            and len(now) > IDLE_CHILDREN)


@pytest.mark.skipif(not (ZOO / "timm").is_dir(), reason="the model zoo is not installed")
async def test_a_real_library_is_learned(tmp_path: Path) -> None:
    worker = await start(ZOO, warm_imports=("torch",))
    try:
        first = await report(worker, "timm", also=("torchvision",))
        assert first["loaded"] is False
        learned = await until_loaded(worker, "timm", also=("torchvision",))
        assert learned["also_loaded"] == {"timm": True, "torchvision": True}
    finally:
        await worker.close()


def stopped_children(worker_pid: int) -> list[int]:
    found = []
    for pid in children_of(worker_pid):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "T":
            found.append(pid)
    return found


async def test_a_zygote_importing_libraries_waits_while_jobs_take_every_core(
        tmp_path: Path) -> None:
    site = make_site(tmp_path)
    (site / "slowlib").mkdir()
    (site / "slowlib" / "__init__.py").write_text("import time\ntime.sleep(6)\n")
    worker = await start(site)
    try:
        assert worker.pid is not None
        await worker.warm(["slowlib"])
        await asyncio.sleep(QUIET_S + 0.5)  # its zygote is importing it now
        assert stopped_children(worker.pid) == []
        if CORES > 1:  # fewer jobs than cores: the imports go on beside them
            fewer = [asyncio.ensure_future(worker.run(f"{JOBS}:nap", {"seconds": 1.0},
                                                      timeout=30)) for _ in range(CORES - 1)]
            await asyncio.sleep(0.5)
            assert stopped_children(worker.pid) == []
            assert [result.status for result in await asyncio.gather(*fewer)] == ["ok"] * len(fewer)
        jobs = [asyncio.ensure_future(worker.run(f"{JOBS}:nap", {"seconds": 1.0}, timeout=30))
                for _ in range(CORES)]
        await asyncio.sleep(0.5)
        paused = stopped_children(worker.pid)
        assert [result.status for result in await asyncio.gather(*jobs)] == ["ok"] * len(jobs)
        await asyncio.sleep(0.2)
        assert len(paused) == 1 and stopped_children(worker.pid) == []
        assert (await until_loaded(worker, "slowlib"))["loaded"] is True
    finally:
        await worker.close()


@pytest.mark.skipif(CORES < 2, reason="one core: the imports wait for a moment without jobs")
async def test_a_library_is_learned_under_jobs_that_never_pause(tmp_path: Path) -> None:
    """Saves that take longer than their gaps (an editor saving while a file that imports
    a slow library is analysed): learning must not wait for a moment without jobs."""
    site = make_site(tmp_path)
    worker = await start(site)
    try:
        first = await report(worker, "countlib")
        assert first["loaded"] is False
        deadline = time.monotonic() + LEARNED_WITHIN_S
        loaded = False
        while not loaded and time.monotonic() < deadline:
            # each job overlaps the next: there is never a moment with no job running, and
            # one ends every few tenths of a second
            nap = asyncio.ensure_future(worker.run(f"{JOBS}:nap", {"seconds": 0.6}, timeout=30))
            await asyncio.sleep(0.3)
            loaded = (await report(worker, "countlib"))["loaded"]
            assert (await nap).status == "ok"
        assert loaded
        for _ in range(4):  # its zygote stays: installed as a job ended, it is no stray
            nap = asyncio.ensure_future(worker.run(f"{JOBS}:nap", {"seconds": 0.6}, timeout=30))
            await asyncio.sleep(0.3)
            assert (await report(worker, "countlib"))["loaded"] is True
            assert (await nap).status == "ok"
    finally:
        await worker.close()


@pytest.mark.parametrize("mode", ["namespaces", "landlock"])
async def test_a_learned_librarys_import_writes_nothing_outside_the_zygotes_folder(
        tmp_path: Path, mode: str) -> None:
    """The zygote that imports a library runs its import-time code under the jobs' write
    limits: with namespaces, read-only mounts; without, Landlock. Whether the kernel can is
    the probe's answer, not fxls's."""
    enforced = probes.NAMESPACES if mode == "namespaces" else probes.LANDLOCK_ABI >= 1
    if not enforced:
        pytest.skip(f"the kernel cannot limit writes by {mode} here")
    site = make_site(tmp_path)
    worker = await start(site, env={} if mode == "namespaces" else {
        "FXLS_SANDBOX_NAMESPACES": "0"})
    try:
        await report(worker, "countlib")
        assert (await until_loaded(worker, "countlib"))["loaded"] is True
        assert worker.pid is not None and imported_by(worker.pid, tmp_path)
        assert not (tmp_path / "imported").exists()
    finally:
        await worker.close()


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def test_a_zygote_replaced_while_still_importing_leaves_the_worker_idle(
        tmp_path: Path) -> None:
    """A second round of learning started while the first round's zygote was still importing
    replaces that zygote: it is ended, and its socket (where it announces itself once ready)
    is no longer watched. It was left running and watched: the worker then spun on its
    unread news, a whole core for as long as it lived."""
    site = make_site(tmp_path)
    (site / "slowlib").mkdir()
    (site / "slowlib" / "__init__.py").write_text("import time\ntime.sleep(3)\n")
    worker = await start(site)
    try:
        assert worker.pid is not None
        await worker.warm(["slowlib"])
        await asyncio.sleep(QUIET_S + 0.5)  # its zygote is importing it now
        await worker.warm(["countlib"])  # the second round: a zygote that imports both
        assert (await until_loaded(worker, "countlib"))["loaded"] is True
        await asyncio.sleep(4.0)  # the first round's zygote would be ready by now
        before = _cpu_ms(worker.pid)
        await asyncio.sleep(1.5)
        assert _cpu_ms(worker.pid) - before < 300  # a spinning worker takes all of 1.5 s
    finally:
        await worker.close()
