"""A run's params (a whole source file) cross the worker boundary encoded once, by the client,
and decoded once, by the job process: the worker forwards them, with the request as it came,
undecoded (issue 32; before, a save encoded and decoded its source text twice each)."""

from __future__ import annotations

import json

import pytest

from fxls.worker.child import read_job
from fxls.worker.messages import Refused, RunRequest, message_of
from fxls.worker.policy import JobPolicy
from fxls.worker.protocol import dumps, encode, with_body
from fxls.worker.request_reader import RequestReader

#: a line of the source text that reads the same in JSON (no escapes): what is counted
MARK = "source_text_of_the_saved_file"
SOURCE = f"import torch\n{MARK} = 1\n" + "x = 1  # é\n" * 20_000


def test_a_runs_source_text_is_encoded_once_and_decoded_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = {"encoded": 0, "decoded": 0}
    real_dumps, real_loads = json.dumps, json.loads

    def counting_dumps(value: object, *args: object, **kwargs: object) -> str:
        text = real_dumps(value, *args, **kwargs)  # type: ignore[arg-type]
        counts["encoded"] += MARK in text
        return text

    def counting_loads(data: str | bytes, *args: object, **kwargs: object) -> object:
        text = data.decode() if isinstance(data, bytes | bytearray) else data
        counts["decoded"] += MARK in text
        return real_loads(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json, "dumps", counting_dumps)
    monkeypatch.setattr(json, "loads", counting_loads)
    params = {"path": "/p/m.py", "source": SOURCE, "settings": {}}
    policy = JobPolicy(network=True, write=("/data",))
    request = RunRequest(7, "pkg.mod:job", 10.0, policy, 0, ("/p/m.py", "/p"))
    sent = with_body(message_of(request), dumps(params))  # the client

    reader = RequestReader(print)  # the worker, the bytes arriving in two reads
    assert reader.take(sent[:5000]) == []
    (arrival,) = reader.take(sent[5000:])
    assert not isinstance(arrival, Refused)
    received, attached = arrival
    assert isinstance(received, RunRequest) and received.policy == policy
    job, job_params = read_job(attached)  # the job process
    assert (job.target, job.policy, job_params) == ("pkg.mod:job", policy, params)
    assert counts == {"encoded": 1, "decoded": 1}


def test_a_refused_run_request_is_answered_and_its_params_are_skipped() -> None:
    reader = RequestReader(print)
    bad = with_body({"op": "run", "id": 3, "target": 5}, dumps({"source": "x"}))
    found = reader.take(bad + encode({"op": "ping"}))
    assert found[0] == Refused(3, "run: 'target' is 5, expected str")
    assert [request.op for request, _ in found[1:]] == ["ping"]  # type: ignore[union-attr]
