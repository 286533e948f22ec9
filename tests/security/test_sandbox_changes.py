"""The job sandbox, attacked through the file system's back doors: metadata (mode with the
setuid bit, times, extended attributes, owner, links), deletes, renames and truncation of
files that exist outside the job's private folder, Unix sockets of services outside it, UDP
and name lookups, and the caller's environment variables. Each attack runs from Python (the
guard refuses it first) and from a subprocess (only the kernel stands in its way), in every
sandbox mode: job processes cloned into namespaces, made behind a relay
(``FXLS_SANDBOX_CLONE=0``), and without namespaces (``FXLS_SANDBOX_NAMESPACES=0``).

What the kernel can enforce is decided by ``probes`` (independent of ``fxls.worker.sandbox``);
where it can, a change that gets through fails the test.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fxls.worker.client import WorkerClient
from fxls.worker.policy import JobPolicy
from tests import probes
from tests.security.sandbox_jobs import CHANGES

JOBS = "tests.security.sandbox_jobs"
pytestmark = pytest.mark.skipif(not probes.LINUX, reason="Linux sandbox")
needs_namespaces = pytest.mark.skipif(not probes.NAMESPACES,
                                      reason="`unshare -Urpn true` fails: no user namespaces")
MODES = [pytest.param("namespaces", marks=needs_namespaces),
         pytest.param("relay", marks=needs_namespaces), "fallback"]
METADATA = ("chmod", "fchmod", "utime", "setxattr", "chown")


def mode_env(mode: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    if mode == "fallback":
        env["FXLS_SANDBOX_NAMESPACES"] = "0"
    if mode == "relay":
        env["FXLS_SANDBOX_CLONE"] = "0"
    return env


async def started(mode: str, **extra: str) -> WorkerClient:
    """A sandboxed worker in ``mode``, checked to be in it."""
    worker = WorkerClient(sys.executable, sandbox=True, env=mode_env(mode, **extra))
    await worker.start()
    facts = worker.sandbox_support or {}
    assert facts.get("namespaces") == (mode != "fallback"), facts
    landlock = 0 if extra.get("FXLS_SANDBOX_LANDLOCK") == "0" else probes.LANDLOCK_ABI
    assert facts.get("landlock_abi") == landlock, facts
    return worker


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(mode: str) -> AsyncIterator[WorkerClient]:
    worker = await started(mode)
    try:
        yield worker
    finally:
        await worker.close()


def snapshot(folder: Path) -> dict[str, Any]:
    """Everything about a folder's entries that a change could touch (ctime included: even a
    chown to the same owner moves it)."""
    found: dict[str, Any] = {}
    for entry in sorted(folder.iterdir()):
        info = entry.lstat()
        found[entry.name] = (info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns,
                             info.st_ctime_ns, info.st_nlink, info.st_size,
                             entry.read_bytes() if stat.S_ISREG(info.st_mode) else None,
                             sorted(os.listxattr(entry, follow_symlinks=False)))
    return found


def outside_files(folder: Path, names: list[str]) -> dict[str, str]:
    folder.mkdir()
    files = {}
    for name in names:
        path = folder / name
        path.write_text("not yours")
        path.chmod(0o644)
        os.utime(path, (1_000_000, 1_000_000))
        files[name] = str(path)
    return files


def kernel_refusal(mode: str, change: str) -> str | None:
    """How the kernel refuses ``change`` of a file outside in ``mode`` (None: it does not)."""
    if mode != "fallback":
        return "OSError EROFS"  # the job's mounts are read-only
    if change in METADATA:
        return "PermissionError EPERM" if probes.SECCOMP else None
    if change == "truncate" and probes.LANDLOCK_ABI < 3:
        return None
    return "PermissionError EACCES" if probes.LANDLOCK_ABI else None


async def test_no_change_outside_by_any_means(mode: str, client: WorkerClient,
                                              tmp_path: Path) -> None:
    """chmod (setuid bit included), fchmod, utime, setxattr, chown, link, symlink, truncate,
    delete and rename of files outside: refused from Python and from a subprocess; nothing
    outside changes."""
    changes = list(CHANGES)
    outside = tmp_path / "outside"
    files = outside_files(outside, changes)
    before = snapshot(outside)
    result = await client.run(f"{JOBS}:change_outside", {"changes": changes, "files": files},
                              timeout=60)
    assert result.status == "ok", result
    assert snapshot(outside) == before
    for change in changes:
        seen = result.value[change]
        python = "PermissionError EPERM" if change in METADATA else "PermissionError EACCES"
        assert seen["python"] == python, (change, seen)
        expected = kernel_refusal(mode, change)
        if expected is not None:
            assert seen["subprocess"] == expected, (change, seen)


async def test_changes_inside_the_private_folder_work(mode: str, client: WorkerClient) -> None:
    """The job's own files stay its own: links, renames, deletes, modes (in namespaces; without
    them the seccomp filter refuses metadata changes everywhere)."""
    result = await client.run(f"{JOBS}:change_inside", {}, timeout=30)
    assert result.status == "ok", result
    metadata = "changed" if mode != "fallback" or not probes.SECCOMP else "PermissionError"
    assert result.value == {"write": "changed", "link": "changed", "symlink": "changed",
                            "rename": "changed", "delete": "changed", "chmod": metadata}


@pytest.mark.parametrize("mode", [pytest.param("namespaces", marks=needs_namespaces)])
async def test_mounts_stay_read_only_without_landlock(mode: str, tmp_path: Path) -> None:
    """Landlock also forbids mount changes; without it the nested user namespace's locks keep
    the job from making its mounts writable again."""
    outside = tmp_path / "outside"
    files = outside_files(outside, ["chmod"])
    before = snapshot(outside)
    worker = await started(mode, FXLS_SANDBOX_LANDLOCK="0")
    try:
        result = await worker.run(f"{JOBS}:remount_and_change", {"path": files["chmod"]},
                                  timeout=30)
    finally:
        await worker.close()
    assert result.status == "ok", result
    assert result.value == {"remount": "refused", "chmod": "OSError EROFS"}, result
    assert snapshot(outside) == before


@pytest.mark.parametrize("mode", [pytest.param("namespaces", marks=needs_namespaces)])
async def test_read_only_without_mount_setattr(mode: str, tmp_path: Path) -> None:
    """Kernels older than 5.12 (no ``mount_setattr``): each mount is remounted read-only."""
    outside = tmp_path / "outside"
    files = outside_files(outside, ["chmod", "utime"])
    before = snapshot(outside)
    worker = await started(mode, FXLS_SANDBOX_MOUNT_SETATTR="0")
    try:
        result = await worker.run(f"{JOBS}:change_outside",
                                  {"changes": ["chmod", "utime"], "files": files}, timeout=30)
        inside = await worker.run(f"{JOBS}:change_inside", {}, timeout=30)
    finally:
        await worker.close()
    assert {c: v["subprocess"] for c, v in result.value.items()} == {
        "chmod": "OSError EROFS", "utime": "OSError EROFS"}, result
    assert snapshot(outside) == before
    assert set(inside.value.values()) == {"changed"}, inside


async def test_a_policy_allows_changes_in_its_folders(client: WorkerClient,
                                                     tmp_path: Path, mode: str) -> None:
    allowed = tmp_path / "allowed"
    files = outside_files(allowed, ["utime", "symlink"])
    result = await client.run(f"{JOBS}:change_outside",
                              {"changes": ["utime", "symlink"], "files": files}, timeout=30,
                              policy=JobPolicy(write=(str(allowed),)))
    assert result.status == "ok", result
    utime = "changed" if mode != "fallback" or not probes.SECCOMP else "PermissionError EPERM"
    assert result.value["utime"] == {"python": utime, "subprocess": utime}, result
    assert result.value["symlink"]["python"] == "changed", result


async def test_the_job_gets_a_clean_environment(mode: str, tmp_path: Path) -> None:
    """A secret in the caller's environment reaches neither the job (Python, a subprocess,
    the process's initial environment block) nor the worker's."""
    secret = f"s3cret-{uuid.uuid4().hex}"
    worker = await started(mode, FXLS_TEST_TOKEN_LIKE="x", GITHUB_TOKEN=secret,
                           LANG="C.UTF-8")
    try:
        result = await worker.run(f"{JOBS}:environment", {}, timeout=30,
                                  policy=JobPolicy(env=(("TORCH_HOME", "/models"),)))
        assert worker.pid is not None
        worker_env = Path(f"/proc/{worker.pid}/environ").read_bytes()
    finally:
        await worker.close()
    assert result.status == "ok", result
    env = result.value["python"]
    assert secret not in repr(result.value) and secret.encode() not in worker_env
    assert "GITHUB_TOKEN" not in result.value["subprocess"]
    job_dir = env["TMPDIR"]
    assert env["HOME"] == job_dir and Path(job_dir).parent.name.startswith("fxls-jobs-")
    assert env["LANG"] == "C.UTF-8" and env["TORCH_HOME"] == "/models"
    assert env["PATH"] == os.environ["PATH"]
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "PYTHONPATH",
                        "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                        "OPENBLAS_NUM_THREADS", "TORCH_HOME"} | {
        name for name in env if name.startswith("LC_")}, sorted(env)
    assert sorted(env) == result.value["subprocess"]


async def test_unix_sockets_outside_are_out_of_reach(mode: str, client: WorkerClient,
                                                     tmp_path: Path) -> None:
    """A service listening on a socket file outside the private folder (started after the
    worker): Python's connection is refused by the guard; in namespaces the socket file is
    /dev/null for the job, so a subprocess's is refused too. Without namespaces the kernel
    does not stop a subprocess (docs/security.md)."""
    path = tmp_path / "service.sock"
    with socket.socket(socket.AF_UNIX) as service:
        service.bind(str(path))
        service.listen(1)
        service.settimeout(0)
        result = await client.run(f"{JOBS}:unix_connect", {"path": str(path)}, timeout=30)
        assert result.status == "ok", result
        assert result.value["connect"] == "PermissionError", result
        if mode != "fallback":
            assert result.value["subprocess"] == "ConnectionRefusedError", result
            with pytest.raises(BlockingIOError):
                service.accept()


async def test_udp_and_name_lookups_are_refused(mode: str, client: WorkerClient) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as server:
        server.bind(("127.0.0.1", 0))
        server.settimeout(0)
        result = await client.run(
            f"{JOBS}:udp_and_names",
            {"port": server.getsockname()[1], "name": "pypi.org"}, timeout=60)
        assert result.status == "ok", result
        assert result.value["python udp"] == "NetworkRefused", result
        assert result.value["python name"] == "NetworkRefused", result
        if mode != "fallback":  # no interface is up in the job's network namespace
            assert result.value["subprocess udp"] == "OSError", result
            assert result.value["subprocess name"] == "gaierror", result
            with pytest.raises(BlockingIOError):
                server.recvfrom(16)


@pytest.mark.parametrize("mode", [pytest.param("namespaces", marks=needs_namespaces),
                                  pytest.param("relay", marks=needs_namespaces)])
async def test_x11_and_service_sockets_are_hidden(mode: str) -> None:
    """``/tmp/.X11-unix`` is an empty folder for the job, and a service socket of the list
    (``/run/docker.sock``) is /dev/null; made by the test where the machine has none."""
    made: list[Path] = []
    services = []
    x11 = Path("/tmp/.X11-unix")
    docker = Path("/run/docker.sock")
    if not x11.exists():
        x11.mkdir(mode=0o1777)
        made.append(x11)
    display = x11 / f"X{uuid.uuid4().int % 10_000 + 50_000}"
    targets = [display]
    if not docker.exists() and os.access(docker.parent, os.W_OK):
        targets.append(docker)
    try:
        for target in targets:
            service = socket.socket(socket.AF_UNIX)
            service.bind(str(target))
            service.listen(1)
            services.append(service)
            made.insert(0, target)
        worker = await started(mode)
        try:
            shown = await worker.run(f"{JOBS}:unix_connect", {"path": str(display)}, timeout=30)
            assert shown.value == {"listing": [], "connect": "PermissionError",
                                   "subprocess": "FileNotFoundError"}, shown
            if docker in targets:
                bus = await worker.run(f"{JOBS}:unix_connect", {"path": str(docker)},
                                       timeout=30)
                assert bus.value["subprocess"] == "ConnectionRefusedError", bus
        finally:
            await worker.close()
    finally:
        for service in services:
            service.close()
        for path in made:
            if path.is_dir():
                path.rmdir()
            else:
                path.unlink()


def test_the_worker_starts_over_without_the_callers_variables(tmp_path: Path) -> None:
    """``python -m fxls.worker`` with a token in its environment: it executes itself again
    with the allow-list (same pid), so its initial environment block holds no token."""
    script = (
        "import asyncio, sys\n"
        "from fxls.worker.client import WorkerClient\n"
        "async def main():\n"
        "    worker = WorkerClient(sys.executable, sandbox=True)\n"
        "    await worker.start()\n"
        "    print(open(f'/proc/{worker.pid}/environ', 'rb').read().hex())\n"
        "    await worker.close()\n"
        "asyncio.run(main())\n")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(repo),
                               "NPM_TOKEN": "leaked-token"})
    assert done.returncode == 0, done.stderr[-3000:]
    environ = bytes.fromhex(done.stdout.split()[-1])
    assert b"leaked-token" not in environ and b"PATH=" in environ


def test_env_setting_reaches_the_job_policy() -> None:
    from fxls.project.settings import Settings
    from fxls.worker.policy import JobPolicy

    good = Settings.from_dict({"env": {"TORCH_HOME": "/models"}})
    assert good.problems == []
    assert good.job_policy().env == (("TORCH_HOME", "/models"),)
    assert JobPolicy.from_dict(good.job_policy().to_dict()).env == (("TORCH_HOME", "/models"),)
    bad = Settings.from_dict({"env": {"TORCH_HOME": 1}})
    assert bad.access.env == {} and [str(p) for p in bad.problems] == [
        "`env` = {TORCH_HOME = 1}: must be a table of strings; using {}"]
