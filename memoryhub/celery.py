"""The Celery application; tasks live in <app>/tasks.py."""

from __future__ import annotations

import math
import os
from typing import Any

from celery import Celery, bootsteps
from click import Option
from django.core.exceptions import ImproperlyConfigured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

app = Celery("memoryhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def check_time_limits(celery_app: Celery, *, visibility_timeout: float | None) -> None:
    """Refuse a broker visibility timeout not above every registered task's hard time limit.

    Tasks are acknowledged late: a broker with a visibility timeout (Redis) hands a task that
    is still running to another worker once it passes, and the task then runs twice at once.
    Raises ImproperlyConfigured, naming CELERY_VISIBILITY_TIMEOUT_SECONDS and the task.
    """
    if visibility_timeout is None:
        return  # The folder transport never redelivers by time.
    celery_app.loader.import_default_modules()
    limits = {
        name: task.time_limit or celery_app.conf.task_time_limit or math.inf
        for name, task in celery_app.tasks.items()
    }
    # Sorted first, so a tie names the same task every time (the first by name).
    name, longest = max(sorted(limits.items()), key=lambda item: item[1])
    if visibility_timeout <= longest:
        raise ImproperlyConfigured(
            f"CELERY_VISIBILITY_TIMEOUT_SECONDS ({visibility_timeout:g}) must be above the "
            f"longest task time limit ({longest:g} s, {name}): a task still running would be "
            "delivered again to another worker"
        )


class TimeLimitCheck(bootsteps.Step):  # type: ignore[misc]  # Celery ships no type hints.
    """Stop a worker from starting when the broker could redeliver a task still running."""

    def __init__(
        self, parent: Any, *, allow_short_visibility_timeout: bool = False, **options: Any
    ) -> None:
        transport_options = parent.app.conf.broker_transport_options or {}
        if not allow_short_visibility_timeout:
            check_time_limits(
                parent.app, visibility_timeout=transport_options.get("visibility_timeout")
            )
        super().__init__(parent, **options)


app.user_options["worker"].add(
    Option(
        ("--allow-short-visibility-timeout",),
        is_flag=True,
        default=False,
        help="Start although a running task may be delivered again (for redelivery tests only).",
    )
)
app.steps["worker"].add(TimeLimitCheck)
