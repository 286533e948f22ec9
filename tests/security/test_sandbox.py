"""The job sandbox, attacked: processes that try to outlive their job, jobs that try to kill
their callers, writes outside the private folder, network access, and a workspace module
that shadows a library the worker imports. What survives is checked in /proc, what was
written on the file system.

Each case runs with the kernel's namespaces (where unprivileged user namespaces are allowed,
as on the CI machines), once with job processes cloned straight into them and once the way
a multi-threaded worker makes them (``FXLS_SANDBOX_CLONE=0``: a fork, then a fork into the
namespaces behind a relay), and, forced with ``FXLS_SANDBOX_NAMESPACES=0``, without them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxls.worker import sandbox
from fxls.worker.client import WorkerClient
from fxls.worker.policy import JobPolicy
from tests import probes

REPO = Path(__file__).resolve().parents[2]
JOBS = "tests.security.sandbox_jobs"
SUPPORT = sandbox.support()  # the code under test: compared with the probes, never trusted
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandbox")
needs_namespaces = pytest.mark.skipif(not probes.NAMESPACES,
                                      reason="`unshare -Urpn true` fails: no user namespaces")
needs_landlock = pytest.mark.skipif(not probes.LANDLOCK_ABI, reason="no Landlock")
MODES = [pytest.param("namespaces", marks=needs_namespaces),
         pytest.param("relay", marks=needs_namespaces), "fallback"]


def mode_env(mode: str) -> dict[str, str]:
    env = dict(os.environ)
    if mode == "fallback":
        env["FXLS_SANDBOX_NAMESPACES"] = "0"
    if mode == "relay":
        env["FXLS_SANDBOX_CLONE"] = "0"
    return env


@pytest.fixture(params=MODES)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[WorkerClient]:
    worker = WorkerClient(sys.executable, sandbox=True, env=mode_env(request.param))
    await worker.start()
    facts = worker.sandbox_support or {}
    assert facts.get("namespaces") == (request.param != "fallback"), facts
    assert facts.get("landlock_abi") == probes.LANDLOCK_ABI, facts
    try:
        yield worker
    finally:
        await worker.close()


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose command line holds ``tag`` (what ``ps`` would list)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag.encode() in (entry / "cmdline").read_bytes():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(tag: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := tagged_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_the_kernel_facts_are_reported() -> None:
    assert (SUPPORT.namespaces, SUPPORT.landlock_abi) == (probes.NAMESPACES,
                                                         probes.LANDLOCK_ABI)
    line = SUPPORT.describe()
    assert line.startswith("sandbox: Linux ")
    assert ("NOT enforced" in line) == (not probes.NAMESPACES)


async def test_a_job_runs_alone_with_a_private_folder(client: WorkerClient) -> None:
    result = await client.run(f"{JOBS}:whoami", {}, timeout=10)
    assert result.status == "ok", result
    private = Path(result.value["tmp"]).parent
    assert result.value["tmp_written"] == "private"
    assert private.parent.name.startswith("fxls-jobs-")
    if client.sandbox_support and client.sandbox_support["namespaces"]:
        assert (result.value["pid"], result.value["ppid"]) == (1, 0)
        assert result.value["processes"] == [1]  # /proc lists nothing outside the job
    assert result.value["uid"] == os.getuid()
    deadline = time.monotonic() + 5
    while private.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not private.exists()  # the private folder goes with the job


async def test_job_folders_of_a_killed_server_are_removed() -> None:
    """A server killed with SIGKILL leaves its jobs' folder behind; the next client removes
    it (its owner is gone), not the folders of live ones."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = Path(tempfile.mkdtemp(prefix=f"fxls-jobs-{int(gone.stdout)}-"))
    (stale / "123").mkdir()
    live = Path(tempfile.mkdtemp(prefix=f"fxls-jobs-{os.getpid()}-"))
    worker = WorkerClient(sys.executable, sandbox=True)
    try:
        await worker.start()
        assert not stale.exists() and live.exists()
    finally:
        await worker.close()
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(stale, ignore_errors=True)


async def test_processes_a_job_starts_end_with_it(client: WorkerClient) -> None:
    tag = f"fxls-escape-{uuid.uuid4().hex}"
    try:
        result = await client.run(f"{JOBS}:escape", {"tag": tag}, timeout=20)
        assert result.status == "ok", result
        assert wait_until_gone(tag) == []
    finally:
        for pid in tagged_processes(tag):
            os.kill(pid, 9)


async def test_processes_of_a_running_job_end_with_the_worker() -> None:
    tag = f"fxls-escape-{uuid.uuid4().hex}"
    worker = WorkerClient(sys.executable, sandbox=True)
    await worker.start()
    try:
        task = asyncio.create_task(worker.run(f"{JOBS}:escape_and_wait", {"tag": tag},
                                              timeout=60))
        deadline = time.monotonic() + 20
        while len(tagged_processes(tag)) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert len(tagged_processes(tag)) >= 3
        await worker.close()
        await task
        assert wait_until_gone(tag) == []
    finally:
        await worker.close()
        for pid in tagged_processes(tag):
            os.kill(pid, 9)


@needs_namespaces
def test_nothing_outlives_a_killed_server() -> None:
    """SIGKILL of the server while a job runs with three processes of its own: the worker,
    the job and its processes all end."""
    tag = f"fxls-escape-{uuid.uuid4().hex}"
    script = textwrap.dedent(f"""
        import asyncio, sys
        from fxls.worker.client import WorkerClient

        async def main():
            client = WorkerClient(sys.executable, sandbox=True)
            await client.start()
            print(client.pid, flush=True)
            await client.run("{JOBS}:escape_and_wait", {{"tag": "{tag}"}}, timeout=60)

        asyncio.run(main())
    """)
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    try:
        assert server.stdout is not None
        worker = int(server.stdout.readline())
        deadline = time.monotonic() + 30
        while len(tagged_processes(tag)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(tagged_processes(tag)) >= 3
        server.kill()
        server.wait()
        assert wait_until_gone(tag) == []
        deadline = time.monotonic() + 5
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker)
    finally:
        server.kill()
        for pid in tagged_processes(tag):
            os.kill(pid, 9)


_SERVER = textwrap.dedent("""
    import asyncio, json, os, sys
    from fxls.worker.client import WorkerClient

    async def main():
        client = WorkerClient(sys.executable, sandbox=True)
        await client.start()
        worker = client.pid
        params = {"worker": worker, "server": os.getpid(), **json.loads(sys.argv[1])}
        attack = await client.run("tests.security.sandbox_jobs:kill_callers", params,
                                  timeout=10)
        after = await client.run("tests.security.sandbox_jobs:whoami", {}, timeout=30)
        print(json.dumps({"attack": attack.status, "outcome": attack.value,
                          "same_worker": client.pid == worker, "after": after.status}))
        await client.close()

    asyncio.run(main())
""")


def run_server(env: dict[str, str], **params: object) -> subprocess.CompletedProcess[str]:
    """A stand-in for the language server: a process whose worker runs the attack."""
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", _SERVER, json.dumps(params)],
                          capture_output=True, text=True, env=env, timeout=120, cwd=REPO)


@pytest.mark.parametrize("mode", MODES)
def test_a_job_cannot_kill_its_callers(mode: str) -> None:
    if mode == "fallback" and probes.LANDLOCK_ABI < 6:
        pytest.skip("without namespaces, only Landlock's signal scope protects the server")
    done = run_server(mode_env(mode))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["attack"] == "ok"
    assert report["same_worker"] and report["after"] == "ok"
    assert report["outcome"]["server"] != "sent" and report["outcome"]["worker"] != "sent"


def test_without_a_kernel_barrier_a_killed_worker_is_restarted() -> None:
    """Neither namespaces nor Landlock: the worker's own session keeps the server out of the
    job's reach of ``killpg(getpgid(getppid()))``; the worker dies and the next job gets a
    new one."""
    env = {**mode_env("fallback"), "FXLS_SANDBOX_LANDLOCK": "0"}
    done = run_server(env, attacks=["worker group"])
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["attack"] == "crashed"  # the worker died under its job
    assert not report["same_worker"] and report["after"] == "ok"
    assert "the worker process died" in done.stderr  # said so in the log


@needs_landlock
async def test_writes_go_only_to_the_private_folder(client: WorkerClient,
                                                    tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    targets = [str(workspace / "out.txt"), str(home / ".profile-extra")]
    result = await client.run(f"{JOBS}:write_outside", {"paths": targets}, timeout=20)
    assert result.status == "ok", result
    assert result.value == {targets[0]: "PermissionError", targets[0] + ".sh": "refused",
                            targets[1]: "PermissionError", targets[1] + ".sh": "refused"}
    assert sorted(workspace.iterdir()) == [] and sorted(home.iterdir()) == []


@needs_landlock
async def test_a_policy_allows_more_folders(client: WorkerClient, tmp_path: Path) -> None:
    target = str(tmp_path / "out.txt")
    result = await client.run(f"{JOBS}:write_outside", {"paths": [target]}, timeout=20,
                              policy=JobPolicy(write=(str(tmp_path),)))
    assert result.value == {target: "python", target + ".sh": "shell"}, result
    assert (tmp_path / "out.txt").read_text() == "written by a job"


async def test_an_existing_folder_can_be_made_again(client: WorkerClient,
                                                   tmp_path: Path) -> None:
    """``makedirs(exist_ok=True)`` of a folder that exists works as without the sandbox; a new
    folder outside the private one is refused."""
    new = tmp_path / "new"
    result = await client.run(f"{JOBS}:make_dirs", {"paths": [str(tmp_path), str(new)]},
                              timeout=20)
    assert result.value == {str(tmp_path): "ok", str(new): "PermissionError"}, result
    assert not new.exists()


def listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    return server


def accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            server.accept()[0].close()
            count += 1
        except TimeoutError:
            return count


async def test_no_network_unless_allowed(client: WorkerClient) -> None:
    with listener() as server:
        port = server.getsockname()[1]
        result = await client.run(f"{JOBS}:connect", {"port": port}, timeout=20)
        assert result.status == "ok", result
        assert result.value["python"] == "NetworkRefused"
        if probes.NAMESPACES or probes.LANDLOCK_ABI >= 4:
            assert result.value["subprocess"] == "refused"
            assert accepted(server) == 0
        allowed = await client.run(f"{JOBS}:connect", {"port": port}, timeout=20,
                                   policy=JobPolicy(network=True))
        assert allowed.value == {"python": "connected", "subprocess": "connected"}, allowed
        assert accepted(server) == 2
        # idle processes are made for the policy of the last job: back to none, refused again
        again = await client.run(f"{JOBS}:connect", {"port": port}, timeout=20)
        assert again.value["python"] == "NetworkRefused", again
        if probes.NAMESPACES or probes.LANDLOCK_ABI >= 4:
            assert again.value["subprocess"] == "refused"
            assert accepted(server) == 0


@needs_namespaces
async def test_session_services_are_out_of_reach(tmp_path: Path) -> None:
    """The user's runtime folder (D-Bus session bus, systemd --user...) is an empty folder for
    the job: a service listening there cannot be asked to act outside the sandbox."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    bus = runtime / "bus"
    with socket.socket(socket.AF_UNIX) as service:
        service.bind(str(bus))
        service.listen(1)
        worker = WorkerClient(sys.executable, sandbox=True,
                              env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)})
        await worker.start()
        try:
            result = await worker.run(f"{JOBS}:unix_connect", {"path": str(bus)}, timeout=20)
        finally:
            await worker.close()
    assert result.value == {"listing": [], "connect": "PermissionError",
                            "subprocess": "FileNotFoundError"}, result


@needs_namespaces
async def test_a_cpu_limit_ends_a_job_that_is_pid_1() -> None:
    worker = WorkerClient(sys.executable, sandbox=True, cpu_limit_s=1)
    await worker.start()
    try:
        started = time.monotonic()
        result = await worker.run(f"{JOBS}:spin", {}, timeout=30)
        assert result.status == "timeout" and "SIGXCPU" in (result.error or ""), result
        assert time.monotonic() - started < 10
    finally:
        await worker.close()


def test_workspace_modules_never_run_in_the_worker(tmp_path: Path) -> None:
    """The editor starts the server in the workspace: a ``torch.py``/``numpy.py`` there must
    not be imported by the worker's warm imports (nor run outside a job)."""
    marker = tmp_path / "ran"
    for name in ("torch", "numpy", "typing_extensions"):
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write('{name} ' + str(__import__('os').getpid()))\n")
    script = textwrap.dedent("""
        import asyncio, json, sys
        from fxls.worker.client import WorkerClient

        async def main():
            client = WorkerClient(sys.executable, warm_imports=("torch",), sandbox=True)
            await client.start()
            result = await client.run("tests.security.sandbox_jobs:whoami", {}, timeout=30)
            print(json.dumps({"errors": client.import_errors, "job": result.status}))
            await client.close()

        asyncio.run(main())
    """)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}."}  # a relative entry too
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {"errors": {}, "job": "ok"}
    assert not marker.exists()


def test_the_server_entry_point_ignores_the_working_directory(tmp_path: Path) -> None:
    """``python -m fxls`` (how editors start the server) with an ``argparse.py`` in the
    workspace: the CLI's own import of argparse must not run it."""
    marker = tmp_path / "ran"
    (tmp_path / "argparse.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    done = subprocess.run([sys.executable, "-m", "fxls", "--version"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("fxls ")
    assert not marker.exists()


async def test_a_job_that_aborts_is_a_crash(client: WorkerClient) -> None:
    """``os.abort()`` (a C library's assertion, say) ends the job as a crash in every mode;
    as PID 1 of its namespace the job ignores its own SIGABRT, and the C library then ends
    it with SIGSEGV."""
    result = await client.run(f"{JOBS}:end_by_signal", {"how": "abort"}, timeout=20)
    assert result.status == "crashed", result
    assert result.error in ("killed by signal SIGABRT", "killed by signal SIGSEGV"), result


@pytest.mark.parametrize("mode", MODES)
async def test_a_job_that_raises_sigterm(mode: str) -> None:
    """Without namespaces the job ends by it; PID 1 of a namespace ignores a signal it sends
    itself whose action is the default, so there it goes on (docs/security.md)."""
    worker = WorkerClient(sys.executable, sandbox=True, env=mode_env(mode))
    await worker.start()
    try:
        result = await worker.run(f"{JOBS}:end_by_signal", {"how": "raise"}, timeout=20)
    finally:
        await worker.close()
    if mode == "fallback":
        assert (result.status, result.error) == ("crashed", "killed by signal SIGTERM"), result
    else:
        assert (result.status, result.value) == ("ok", "still running"), result


def test_a_process_with_threads_is_not_single_threaded() -> None:
    """A worker with a second thread (a BLAS pool numpy started) forks with the C library's
    at-fork handlers, not with a bare clone."""
    import threading

    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not sandbox._single_threaded()
    finally:
        release.set()
        thread.join()


@needs_namespaces
async def test_a_job_cannot_bring_up_an_interface_in_the_shared_network_namespace() -> None:
    """Jobs without network share the zygote's empty network namespace: they have no
    capability there, so none of them can bring the loopback up for the others."""
    worker = WorkerClient(sys.executable, sandbox=True)
    await worker.start()
    try:
        result = await worker.run(f"{JOBS}:bring_up_loopback", {}, timeout=30)
        assert result.status == "ok" and result.value == "PermissionError", result
    finally:
        await worker.close()


@pytest.mark.skipif(probes.LANDLOCK_ABI < 6, reason="Landlock scopes need ABI 6")
async def test_two_jobs_cannot_talk_over_an_abstract_socket() -> None:
    """Abstract Unix sockets belong to the network namespace, which jobs share; Landlock's
    scope keeps each job to its own."""
    worker = WorkerClient(sys.executable, sandbox=True)
    await worker.start()
    name = f"fxls-test-{uuid.uuid4().hex}"
    ready = asyncio.Event()
    try:
        listening = asyncio.create_task(worker.run(
            f"{JOBS}:abstract_socket", {"role": "listen", "name": name, "seconds": 3},
            timeout=30, on_partial=lambda value: ready.set()))
        await asyncio.wait_for(ready.wait(), 30)  # the listener is bound and listening
        caller = await worker.run(f"{JOBS}:abstract_socket",
                                  {"role": "connect", "name": name}, timeout=30)
        listener_saw = await listening
        assert caller.value == "PermissionError", caller
        assert listener_saw.value == "TimeoutError", listener_saw
    finally:
        await worker.close()
