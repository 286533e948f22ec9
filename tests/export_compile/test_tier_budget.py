"""The export and compile tiers stop starting classes before the job's timeout would end the
job (an ended job sends no report: every status the tiers found would be lost); the classes
left say why they did not run."""

from __future__ import annotations

import time

from fxls.analysis.pipeline.tier_budget import TierBudget


def test_a_job_with_time_left_runs_another_class() -> None:
    assert TierBudget(30.0, elapsed=5.0).allows_another()


def test_a_job_whose_stages_took_its_timeout_runs_none() -> None:
    budget = TierBudget.of(30.0, {"import": 2_000.0, "trace": 8_000.0, "observe": 20_000.0})
    assert not budget.allows_another()
    assert budget.reason == ("not run: out of time (the job's timeout is 30 s; raise it with "
                             "`timeout` in [tool.fxls] or `--timeout`)")


def test_the_longest_class_so_far_must_still_fit() -> None:
    budget = TierBudget(1.0, elapsed=0.5)  # 0.4 s left before the margin
    budget.start()
    time.sleep(0.25)
    budget.stop()
    assert not budget.allows_another()  # another 0.25 s would end past the margin


def test_no_timeout_no_limit() -> None:
    assert TierBudget(0.0, elapsed=100.0).allows_another()
