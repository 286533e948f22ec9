"""What one job may do and use: one typed value from the settings to the job process.

``Settings.job_policy()`` makes it; ``WorkerClient.run(policy=...)`` encodes it once, in
the run request (``to_dict()``: the message is JSON). The worker decodes the request once
(``messages.RunRequest``), picks the job process that fits the policy (network or not),
watches the job's processes against its limits (``fxls.worker.limits``) and hands the
request on undecoded to the job process, which decodes it once and applies the policy
(``fxls.worker.child``: rlimits, ``sandbox.confine``) before any user code runs. The job
reads it there (``api.job_policy()``): it is the only source of, e.g., the job's decision to
refuse the network itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxls.worker.protocol import JsonValue


@dataclass(frozen=True, slots=True)
class JobPolicy:
    """A job's rights (beyond computing and writing its private folder) and limits.

    A limit of None is the worker's default (``memory_mb``) or none at all."""

    #: may open network connections
    network: bool = False
    #: absolute folders it may write to, besides its private temporary folder
    write: tuple[str, ...] = ()
    #: memory of all the job's processes together (MB; also each one's address space)
    memory_mb: int | None = None
    #: processes the job may run at once (itself included)
    max_processes: int | None = None
    #: size of the job's private temporary folder (MB)
    tmp_mb: int | None = None
    #: environment variables the job gets besides the allow-list (``[tool.fxls] env``)
    env: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, JsonValue]:
        return {"network": self.network, "write": list(self.write), "memory_mb": self.memory_mb,
                "max_processes": self.max_processes, "tmp_mb": self.tmp_mb,
                "env": dict(self.env)}

    @classmethod
    def from_dict(cls, data: object) -> JobPolicy:
        """The policy ``to_dict`` gave; missing or ill-typed members take their defaults."""
        if not isinstance(data, dict):
            return cls()
        write = data.get("write")
        env = data.get("env")
        return cls(
            network=data.get("network") is True,
            write=tuple(p for p in write if isinstance(p, str)) if isinstance(write, list)
            else (),
            memory_mb=_positive(data.get("memory_mb")),
            max_processes=_positive(data.get("max_processes")),
            tmp_mb=_positive(data.get("tmp_mb")),
            env=tuple((k, v) for k, v in env.items() if isinstance(k, str) and isinstance(v, str))
            if isinstance(env, dict) else (),
        )


def _positive(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 1:
        return None
    return int(value)
