"""Every task stops before the broker would deliver it again (memoryhub/celery.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memoryhub.celery import app, check_time_limits

REPO = Path(__file__).resolve().parents[2]
# A port where no broker listens: a worker that got past its checks would wait for it.
UNREACHABLE_BROKER = "redis://127.0.0.1:9/0"


def _default_visibility_timeout() -> int:
    """The visibility timeout settings.py gives a Redis broker when none is configured."""
    env = {k: v for k, v in os.environ.items() if k != "CELERY_VISIBILITY_TIMEOUT_SECONDS"}
    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])"
    )
    result = subprocess.run(  # noqa: S603  # Our own interpreter and a fixed script.
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**env, "CELERY_BROKER_URL": UNREACHABLE_BROKER},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(result.stdout.strip().splitlines()[-1])


def test_every_registered_task_has_a_time_limit_below_the_default_visibility_timeout():
    app.loader.import_default_modules()
    visibility_timeout = _default_visibility_timeout()
    limits = {name: task.time_limit or app.conf.task_time_limit for name, task in app.tasks.items()}
    assert "memoryhub.consolidate_memories" in limits
    too_long = {
        name: limit
        for name, limit in limits.items()
        if limit is None or limit >= visibility_timeout
    }
    assert too_long == {}
    check_time_limits(app, visibility_timeout=visibility_timeout)


def test_a_visibility_timeout_not_above_the_longest_time_limit_is_refused():
    app.loader.import_default_modules()
    longest = max(task.time_limit or app.conf.task_time_limit for task in app.tasks.values())
    with pytest.raises(ImproperlyConfigured, match="CELERY_VISIBILITY_TIMEOUT_SECONDS"):
        check_time_limits(app, visibility_timeout=longest)
    check_time_limits(app, visibility_timeout=longest + 1)
    check_time_limits(app, visibility_timeout=None)  # the folder transport: no redelivery


def test_a_worker_with_a_short_visibility_timeout_refuses_to_start():
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--pool=solo"],
        cwd=REPO,
        env={
            **os.environ,
            "CELERY_BROKER_URL": UNREACHABLE_BROKER,
            "CELERY_VISIBILITY_TIMEOUT_SECONDS": "1800",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "CELERY_VISIBILITY_TIMEOUT_SECONDS (1800) must be above" in result.stderr
    # The task with the longest limit; of the tied ones (3300 s), the first by name.
    assert "memoryhub.consolidate_memories" in result.stderr
